/*-------------------------------------------------------------------------
 *
 * unlearn.h
 *	  Shared declarations of the unlearn extension.
 *
 * Symbols, defined once here and used with these meanings everywhere
 * (Guo, Goldstein, Hannun, van der Maaten, "Certified Data Removal from
 * Machine Learning Models", ICML 2020; docs/certified-removal.md):
 *
 *	x_i		a row mapped into the model's feature space, ||x_i|| <= 1
 *			(the map is x -> (x, 1) / max(s, ||(x, 1)||), see features.c)
 *	p		length of x_i: d input features plus one for the intercept
 *	w		the released weights (one vector per one-vs-rest class)
 *	b		the objective-perturbation noise, b ~ N(0, sigma^2 I_p)
 *	Lambda	the absolute L2 weight, lambda * n frozen at (re)training
 *	L_b		sum_i l(w.x_i, y_i) + (Lambda/2)||w||^2 + b.w   (Algorithm 1)
 *	w0		the anchor: the point at which the stored Hessian was built
 *	H		the stale Hessian sum_i l''(w0.x_i) x_i x_i' + Lambda I, kept as
 *			a packed lower Cholesky factor and down-dated per row
 *	K'		the Gram matrix sum_i x_i x_i' of the rows the model reflects
 *			(kept only for the guo bound)
 *	C		sum_i l''(w0.x_i) over the rows the model reflects: the trace
 *			weight of H's data part, one scalar per class
 *	Delta	sum over removed rows of grad l(w.x_r, y_r), minus the same sum
 *			over added rows (Eq. 3 / Eq. 6)
 *	v		H^{-1} Delta, the Newton step: w <- w + v
 *	gamma	Lipschitz constant of l'' (1/(6 sqrt 3) for logistic, 0 squared)
 *	beta	spent budget: ||u_0|| plus the sum of per-step residual bounds
 *	eps'	the budget: largest residual norm the noise b certifies
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_H
#define UNLEARN_H

#include "postgres.h"
#include "fmgr.h"
#include "access/htup.h"
#include "storage/itemptr.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "nodes/pg_list.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/relcache.h"

/* Errors specific to the extension use standard SQLSTATEs:
 * 22023 invalid_parameter_value, 22P02, 42703 undefined_column, etc. */

typedef enum UnlearnLoss
{
	LOSS_LOGISTIC,
	LOSS_SQUARED
} UnlearnLoss;

typedef enum UnlearnBound
{
	BOUND_GUO,					/* Corollary 1: gamma ||X'|| ||v|| ||X'v|| */
	BOUND_TAYLOR,				/* (gamma/2) v'K'v (certified-removal.md §4.2) */
	BOUND_EXACT					/* ||R|| from one pass over the rows */
} UnlearnBound;

/*
 * Whether a model releases weights.  READY: coef is released and
 * certified.  TOO_FEW_ROWS: the table holds fewer rows than weights, so
 * nothing is released and no removal state is kept; the change that
 * brings the rows back to p or more retrains.  SUSPENDED: the budget ran
 * out under on_exhausted = 'suspend'; nothing is released until
 * unlearn_retrain.  In both other states the triggers only count rows, so
 * erasure never waits for a model.
 */
typedef enum UnlearnPreprocess
{
	PREPROCESS_STANDARDIZE,		/* centre and spread of the rows, on a grid */
	PREPROCESS_DECLARED,		/* centre and spread given at training */
	PREPROCESS_NONE				/* the identity */
} UnlearnPreprocess;

typedef enum ModelStatus
{
	MODEL_READY,
	MODEL_TOO_FEW_ROWS,
	MODEL_SUSPENDED
} ModelStatus;

/*
 * Alignment of every operand handed to OpenBLAS: its generic kernels (on
 * CPUs it does not recognise) change their summation order with an
 * operand's 16-byte alignment, and palloc gives none, so two backends could
 * round the same call differently (linalg.c, state_store.c).
 */
#define BLAS_ALIGN 64

#define UNLEARN_MAX_CLASSES 1000
#define UNLEARN_MAX_DIMS 100000

/* A dense n x p design matrix, row-major, rows already mapped. */
typedef struct DesignMatrix
{
	int64		n;
	int			p;
	double	   *x;				/* n * p */
	double	   *y;				/* n labels: +-1 for logistic, value for squared */
	int		   *cls;			/* n class indexes (multiclass), or NULL */
	int64		skipped;		/* rows read and left out for a null */
} DesignMatrix;

/*
 * Identity of a version of a model's removal matrices (state_store.c):
 * the version of its unlearn.model_state row written with them.
 */
typedef struct StateVersion
{
	TransactionId xmin;
	ItemPointerData ctid;
} StateVersion;

/*
 * Model definition as stored in unlearn.models, plus the secret state of
 * unlearn.model_state once loaded.
 */
typedef struct UnlearnModel
{
	char	   *name;
	Oid			owner;
	Oid			source;
	char	   *label;
	int			nfeatures;
	char	  **features;		/* column names, or expressions' canonical text */
	bool	   *is_expression;	/* per feature, or NULL: all are columns */
	bool		feature_array;
	Oid		   *column_types;	/* nfeatures + 1, label last */
	Oid		   *feature_base_types; /* their base types (rows.c), or NULL */
	UnlearnLoss loss;
	int			nclasses;		/* K: number of weight vectors (1 unless OvR) */
	int			nlabels;		/* number of distinct labels kept in classes */
	char	  **classes;		/* label values as text */
	int			dims;			/* d */
	bool		intercept;
	int			p;				/* d + intercept */
	double		scale;			/* D of the row map (column_map.c) */
	double		intercept_scaling;	/* a: the intercept's coordinate before D */
	int			spread_steps;	/* steps of the spread grid per power of two */
	bool		classes_declared;	/* classes fixed at training, not the rows' */
	UnlearnPreprocess preprocess;	/* where centre and spread come from */
	double	   *centre;			/* map_columns(m) each; NULL: identity */
	double	   *spread;
	int64		rows;
	int64		skipped;		/* rows outside the model for a null */
	bool		skip_nulls;		/* nulls => 'skip' (else a null is an error) */
	int64		trained_rows;
	int64		removed;
	int64		inserted;
	int			retrains;
	int			reanchors_now;	/* re-anchorings in this call (0 or 1) */
	double		lambda;
	double		reg;			/* Lambda */
	double		sigma;
	double		epsilon;
	double		delta;
	double		budget;			/* eps' */
	double		spent;			/* beta, l2 over classes */
	UnlearnBound bound;
	bool		retrain_on_exhausted;	/* else suspend */
	bool		per_row_steps;
	bool		deferred;		/* removal => 'deferred': changes queue in unlearn.pending */
	ModelStatus status;
	double	   *coef;			/* K * p (zeros unless READY) */

	/* secret state (catalog_load_model with_state) */
	double	   *noise;			/* K * p: b */
	double	   *anchor;			/* K * p: w0 */
	double	   *factor;			/* K * p(p+1)/2: packed lower Cholesky of H */
	double	   *gram;			/* p(p+1)/2: packed lower K' */
	double		gram_bound;		/* rigorous upper bound on lambda_max(K') */
	double	   *class_spent;	/* K: beta_k */
	double	   *weight_sum;		/* K: C_k = sum_i l''(w0_k.x_i) over current rows */
	double	   *column_sums;	/* 2 per column: S1, S2 ('standardize') */
	int64	   *class_rows;		/* nlabels: rows per label of a classifier */
	bool		retrained_now;	/* (re)trained in this call: rewrite b and w0 */
	bool		anchor_changed; /* re-anchored in this call: rewrite w0 */
	bool		gram_changed;	/* K' changed in this call: rewrite its blocks */
	bool		rebuilt_now;	/* matrices rebuilt in this call (not resident) */
	double	   *state_buffer;	/* factor and gram in one state_store buffer */
	StateVersion version;		/* of the state loaded or written last */
	Oid			changed_by;		/* the role whose statement changes it, or
								 * InvalidOid (training, the worker) */
	int			figures_readable;	/* by changed_by: 0 not yet asked, 1
									 * yes, -1 no (caller_reads_figures) */
} UnlearnModel;

#define PACKED_SIZE(p) ((Size) (p) * ((p) + 1) / 2)

/*
 * Start of column j of a packed lower p x p matrix: element (i, j), i >= j,
 * is at packed_column(p, j) + (i - j).
 */
static inline Size
packed_column(int p, int j)
{
	return (Size) j * p - (Size) j * (j - 1) / 2;
}

/* only the guo bound needs K' (and so keeps it, down-dated like H) */
#define MODEL_HAS_GRAM(m) ((m)->bound == BOUND_GUO)

/* doubles of m's removal matrices: the K factors, then K' if kept */
static inline Size
model_matrix_doubles(const UnlearnModel *m)
{
	return PACKED_SIZE(m->p) * (m->nclasses + (MODEL_HAS_GRAM(m) ? 1 : 0));
}

/* point m's factor and K' into matrices (that layout), or all at NULL */
static inline void
model_point_matrices(UnlearnModel *m, double *matrices)
{
	m->state_buffer = m->factor = matrices;
	m->gram = (matrices != NULL && MODEL_HAS_GRAM(m)) ?
		matrices + PACKED_SIZE(m->p) * m->nclasses : NULL;
}

/* linalg.c: thin wrappers over OpenBLAS / LAPACKE */
extern void linalg_init(void);
extern bool linalg_parallel(bool on);
extern int	linalg_threads(void);
extern bool chol_factor_packed(double *ap, int p);
extern void chol_solve_packed(const double *lp, int p, double *rhs);
extern void packed_lower_transpose_product(const double *lp, int p, double *v);
extern void packed_from_full(const double *full, int p, double *packed);
extern void full_from_packed(const double *packed, int p, double *full);
extern double packed_quadratic(const double *ap, int p, const double *v, double *av);
extern double packed_max_eigenvalue_bound(const double *ap, int p);
extern double vec_dot(const double *x, const double *y, int n);
extern double vec_norm(const double *v, int p);

/* cholesky_modify.c: Givens update, hyperbolic (mixed) down-date */
extern void chol_rank1_update(double *lp, int p, const double *x, double weight);
extern bool chol_rankk_downdate(double *lp, int p, const double *x, const double *weights,
								int k);

/* loss.c */
extern double loss_value(UnlearnLoss loss, double z, double y);
extern double loss_d1(UnlearnLoss loss, double z, double y);
extern double loss_d2(UnlearnLoss loss, double z, double y);
extern double loss_gamma(UnlearnLoss loss);
extern double logistic_sigmoid(double z);

/* budget.c */
extern double gaussian_budget(double sigma, double epsilon, double delta);
extern void draw_gaussian_noise(double *b, int n, double sigma);
extern double combine_class_spent(const double *class_spent, int k);
extern double rounding_allowance(int64 n, int p, double magnitude);

/* column_map.c: the row map (see its header) */
typedef struct RowMap
{
	int			dims;
	bool		intercept;
	bool		pooled;			/* one array column: one centre and spread */
	double		scale;			/* D */
	double		intercept_scaling;	/* a */
	const double *centre;		/* per column; NULL: the identity */
	const double *spread;
} RowMap;
/* the map of a model trained from 0.8.0 (column_map.c), and the bounds of a stored one */
#define UNLEARN_INTERCEPT_SCALING 2.0
#define UNLEARN_SPREAD_STEPS 4
#define MAX_INTERCEPT_SCALING 16.0
#define MAX_SPREAD_STEPS 64
struct RowBatch;
extern void model_row_map(const UnlearnModel *m, RowMap *map);
extern void map_row(const RowMap *map, double *row);
extern double row_map_divisor(int p);
extern int	map_columns(const UnlearnModel *m);
extern void column_map_fit(UnlearnModel *m, const double *x, int64 n, int stride);
extern void column_map_fit_moments(UnlearnModel *m, int64 count, const double *mean,
								   const double *sd);

/* aggregates.c: a statistics state as a training pass reads it */
typedef struct StatsView
{
	bool		hessian;		/* a gradient-and-Hessian state */
	int			p;
	int64		rows;
	double		loss_sum;
	const double *w;			/* NULL for a Gram state */
	const double *gradient;		/* NULL for a Gram state */
	const double *matrix;		/* packed lower; NULL for a gradient state */
} StatsView;
extern void stats_view(Datum d, StatsView *view);

/* newton.c: Algorithm 1 over a pass oracle */
typedef struct PassTerms
{
	int64		rows;
	double		loss_sum;		/* sum_i l(w.x_i, y_i) */
	double	   *gradient;		/* sum_i l'_i x_i, p */
	double	   *hessian;		/* sum_i l''_i x_i x_i', packed lower */
} PassTerms;
/*
 * the data terms of classes[0..count-1] at points[0..count-1], one pass;
 * terms[i].hessian is filled where hessian[i] (may be anyway)
 */
typedef void (*PassOracle) (void *arg, int count, const int *classes,
							const double *const *points, const bool *hessian,
							PassTerms *terms);
typedef struct NewtonProblem
{
	const char *model;
	char	  **class_names;	/* one-vs-rest: for the NOTICEs */
	int			p;
	int			nclasses;
	UnlearnLoss loss;
	double		reg;			/* Lambda */
	const double *noise;		/* b, nclasses x p */
	double		target;			/* residual at which a class stops */
	int			warning_level;
	bool		verbose;
	PassOracle	evaluate;
	/* optional: called after each pass with the largest iteration count
	 * and gradient norm of the classes still iterating */
	void		(*report) (int iteration, int classes, int classes_done,
						   double gradient_norm);
	void	   *arg;
} NewtonProblem;
extern void newton_fit(const NewtonProblem *np, double *coef, double *anchor,
					   double *factor, double *weight_bound, double *residual);
extern bool regularised_pass_terms(UnlearnLoss loss, double reg, const double *w,
								   const double *b, int p, const PassTerms *terms, double *g,
								   double *allowance, double *weight_bound, double *factor);

/* train_pass.c: training and re-anchoring by aggregate passes */
extern bool reanchor_passes(UnlearnModel *m, double *factor, double *weight_bound,
							double *g, double *allowance, int64 *rows);

/* pass_rows.c: the row functions of a training pass */
extern Datum row_map_array(const UnlearnModel *m);
extern bool column_map_update(UnlearnModel *m, const struct RowBatch *removed,
							  const struct RowBatch *added);

/* predict.c: what prediction needs of a released model */
typedef struct PredictModel
{
	char	   *name;
	UnlearnLoss loss;
	int			dims;
	int			p;
	int			nclasses;
	int			nlabels;
	RowMap		map;
	double	   *coef;
	char	  **classes;
	double	   *row;			/* scratch, p */
	double	   *proba;			/* scratch, one per label */
	UnlearnModel *columns;		/* the model's columns, for decode_model_row */
} PredictModel;
extern PredictModel *load_predict_model(const char *name, MemoryContext cxt);
extern double score_row(PredictModel *pm, int *best);
extern int	class_probabilities(PredictModel *pm);
extern void require_classifier(PredictModel *pm, const char *function);
extern UnlearnModel *model_on_relation(PredictModel *pm, FunctionCallInfo fcinfo, int argno,
									   bool with_label, Oid *relid);
extern void bind_relation_columns(UnlearnModel *m, Oid relid, bool with_label);

/* metrics.c */
typedef struct ClassificationMetrics
{
	double		accuracy;
	double		log_loss;
	double		roc_auc;		/* NaN: a class lacks positives or negatives */
	double		macro_f1;
	double	   *precision;		/* K each */
	double	   *recall;
	double	   *f1;
	int64	   *confusion;		/* K x K, row: true class, column: predicted */
} ClassificationMetrics;
typedef struct RegressionMetrics
{
	double		r2;				/* NaN for constant targets */
	double		rmse;
	double		mae;
} RegressionMetrics;
extern void classification_metrics(const int *truth, const int *predicted, const double *proba,
								   int64 n, int K, ClassificationMetrics *out);
extern void regression_metrics(const double *y, const double *pred, int64 n,
							   RegressionMetrics *out);

/* features.c */
extern bool feature_values_finite(const double *raw, int d);
extern void check_feature_values(const double *raw, int d, const char *model);
extern void resolve_features(UnlearnModel *m, Oid relid, ArrayType *features,
							 const char *label);
extern void verify_source_columns(UnlearnModel *m);
extern List *model_read_columns(UnlearnModel *m);
extern bool model_reads_column(UnlearnModel *m, const char *column);
extern void refuse_column_change(UnlearnModel *m, const char *column, const char *change);

/* feature_expr.c */
#define feature_is_expression(m, j) ((m)->is_expression != NULL && (m)->is_expression[j])
typedef struct FeatureEvaluator FeatureEvaluator;
extern int	pin_expression_settings(void);
extern void unpin_expression_settings(int level);
extern List *feature_expr_column_names(const char *text, const char *model);
extern Node *feature_expr_parse(const char *text, Oid relid, const char *model,
								bool linear, Oid *result_type);
extern char *feature_expr_canonical(Node *expr, Oid relid);
extern char *feature_sql(UnlearnModel *m, int j);
extern List *feature_column_names(UnlearnModel *m, int j);
extern FeatureEvaluator *feature_evaluator_create(UnlearnModel *m, TupleDesc desc);
extern void feature_evaluator_fill(FeatureEvaluator *fe, TupleTableSlot *slot,
								   Datum *values, bool *isnull);
extern void feature_evaluator_reset(FeatureEvaluator *fe);
extern void feature_evaluator_free(FeatureEvaluator *fe);

/* rows.c */
extern bool is_numeric_scalar(Oid base);
extern bool feature_type_supported(Oid type, bool *is_array);
extern bool feature_type_fits(UnlearnModel *m, Oid type);
extern bool label_type_supported(Oid type, UnlearnLoss loss);
extern char *label_from_text(Oid type, const char *text, double *value);
extern char *label_from_datum(Oid type, Datum d, double *value);
extern char *label_from_base_datum(Oid base, Datum d, double *value);
extern void model_null_label_error(UnlearnModel *m);
extern void model_null_feature_error(UnlearnModel *m, int j);
extern double numeric_datum_to_double(Oid base, Datum d);
/* the longest model name: the catalog's primary key indexes it */
#define UNLEARN_MAX_NAME 1024
/* the largest lambda: Lambda = lambda n stays far from overflow */
#define UNLEARN_MAX_LAMBDA 1e100
/*
 * The largest least-squares label a model takes: beyond it the squared
 * loss of a row could overflow, so such a row is outside the model
 */
#define UNLEARN_MAX_LABEL 1e100
extern bool model_takes_label(UnlearnModel *m, const char *label, double value);
extern char *squared_label_condition(UnlearnModel *m);
extern void append_declared_label_condition(UnlearnModel *m, StringInfo cond, int param);
extern char *model_null_element_condition(const char *col);
extern char *model_null_condition(UnlearnModel *m, bool with_label);
extern void append_model_row_condition(UnlearnModel *m, StringInfo cond, int param);
extern int	extract_float_array(Datum arr, double *out, int expected, const char *what);
extern char *build_feature_select(UnlearnModel *m, const char *relation,
								  const char *trailing);
extern void check_feature_select_types(UnlearnModel *m, TupleDesc desc, bool with_label,
									   const Oid *trailing_types, int ntrailing);
extern bool model_row_has_null(UnlearnModel *m, const Datum *values, const bool *isnull,
							   bool with_label);
extern bool decode_model_row(UnlearnModel *m, const Datum *values, const bool *isnull,
							 double *raw, char **label, double *label_value);
extern bool decode_spi_row(UnlearnModel *m, HeapTuple tuple, TupleDesc desc, double *raw,
						   char **label, double *label_value);
typedef struct SlotRowReader SlotRowReader;
extern SlotRowReader *slot_row_reader_begin(UnlearnModel *m, Relation rel);
extern bool slot_row_decode(SlotRowReader *reader, TupleTableSlot *slot, double *raw,
							char **label, double *label_value);
extern bool slot_row_decode_guarded(SlotRowReader *reader, TupleTableSlot *slot,
									double *raw, char **label, double *label_value,
									bool *failed);
extern void slot_row_reader_end(SlotRowReader *reader);

/* train.c */
extern int64 relation_row_count(Oid relid);
extern int64 model_row_count(UnlearnModel *m, int64 *skipped);
extern void load_design(UnlearnModel *m, const char *relation, DesignMatrix *dm);
extern void train_loaded(UnlearnModel *m, bool verbose);
extern bool reanchor_loaded(UnlearnModel *m, double *factor, double *weight_sum, double *g,
							double *allowance, int64 *rows);
extern double fit_class(UnlearnModel *m, const DesignMatrix *dm, int k,
						const double *b, double *w, double *anchor, double *factor,
						double *weight_sum, bool verbose);
extern void gram_of_design(const DesignMatrix *dm, double *gram_packed);
extern bool design_hessian_factor(UnlearnModel *m, const DesignMatrix *dm, int k,
								  const double *w, double *factor, double *weight_sum);
extern double design_gradient(UnlearnModel *m, const DesignMatrix *dm, int k,
							  const double *w, const double *b, double *g,
							  double *magnitude);
extern void map_design(UnlearnModel *m, DesignMatrix *dm, bool fit);
extern void free_design(DesignMatrix *dm);
extern bool retrain_model(UnlearnModel *m, bool verbose, bool fresh_noise);
extern void classes_from_rows(UnlearnModel *m);
extern void no_classes(UnlearnModel *m);
extern double design_target(UnlearnModel *m, const DesignMatrix *dm, int64 i, int k);

/* catalog.c */
extern UnlearnModel *catalog_load_model(const char *name, bool with_state, bool for_update,
										bool missing_ok);
typedef struct ModelRef
{
	char	   *name;
	Oid			owner;
	bool		deferred;		/* removal => 'deferred' */
} ModelRef;
extern List *catalog_models_of_relation(Oid relid);
extern List *catalog_ready_models(double share, bool every);
extern double catalog_measured_spent(const char *name);
extern void catalog_load_state(UnlearnModel *m, bool for_update);
extern void catalog_checkout_matrices(UnlearnModel *m);
extern bool catalog_state_version(const char *name, StateVersion *version);
extern void catalog_lock_model(const char *name);
extern bool catalog_tracks_classes(void);
extern bool catalog_has_deferred_removal(void);
extern void refuse_foreign_partitions(Oid relid);
extern bool catalog_has_expressions(void);
extern bool catalog_has_map_grid(void);
extern bool catalog_has_declared_classes(void);
extern bool catalog_has_training_passes(void);
extern bool catalog_has_lean_passes(void);
extern Datum cstring_text_array(char **v, int n);
extern double catalog_mean_bound_per_row(const char *name, Oid owner);
extern bool catalog_has_grants(void);
extern bool catalog_model_granted(const char *name, Oid role, bool weights);
extern bool catalog_set_grant(const char *name, Oid owner, Oid grantee,
							  const char *privilege, bool grant);
extern void catalog_count_skipped(const char *name, int64 delta);
extern bool catalog_model_identity(const char *name, bool for_update, bool missing_ok,
								   Oid *owner, Oid *source);
extern void catalog_quarantine_model(const char *name);
extern const char *model_status_name(ModelStatus status);
extern void corrupt_model(UnlearnModel *m, const char *what) pg_attribute_noreturn();
extern void catalog_insert_model(UnlearnModel *m);
extern void catalog_update_model(UnlearnModel *m);
extern void catalog_delete_model(const char *name);
extern void catalog_ledger(UnlearnModel *m, const char *operation, int64 removed,
						   int64 added, double bound, bool retrained);
extern void catalog_attach_triggers(Oid relid);
extern void catalog_detach_triggers_if_unused(Oid relid);
extern Datum partition_set(Oid relid, int *count);
extern void catalog_set_partitions(Oid relid);
extern char *relation_qualified_name(Oid relid);
extern Datum coef_array(const double *coef, int nclasses, int p);
extern Datum float8_array(const double *v, int n);

/* privilege.c */
typedef struct ExtensionContext
{
	Oid			caller;			/* the user on entry, whose rights count */
	Oid			save_userid;
	int			save_sec_context;
	int			nestlevel;
} ExtensionContext;
extern void enter_extension_context(ExtensionContext *ctx);
extern void leave_extension_context(ExtensionContext *ctx);
extern void enter_table_owner_context(Oid relid, ExtensionContext *ctx);
extern void check_model_owner(UnlearnModel *m, Oid caller);
extern void check_model_or_table_owner(UnlearnModel *m, Oid caller, const char *hint);
extern void check_can_train(UnlearnModel *m, Oid relid, Oid caller);
extern bool model_owner_may_read(UnlearnModel *m);
extern bool model_owner_owns_table(UnlearnModel *m);
extern bool may_read_model(const char *name, Oid owner, Oid role, bool weights);
extern void check_model_read(const char *name, Oid owner, Oid caller, bool weights);

/* grants.c */
typedef enum ModelAccess
{
	MODEL_FIGURES,				/* status line, ledger: owner or any grant */
	MODEL_WEIGHTS,				/* weights, predictions: owner or 'read' */
	MODEL_OWNER					/* removal state: owner only */
} ModelAccess;
extern Oid	check_caller_on_model(const char *name, ModelAccess access);

/*
 * A notice or warning about what a change did to a model reaches the
 * caller only if it may read the model's figures; otherwise it goes to
 * the server log alone (whatever the caller's client_min_messages).
 */
extern bool caller_reads_figures(UnlearnModel *m);
#define MODEL_NOTICE(m) (caller_reads_figures(m) ? NOTICE : LOG_SERVER_ONLY)
#define MODEL_WARNING(m) (caller_reads_figures(m) ? WARNING : LOG_SERVER_ONLY)

/* mechanism/newton.c: the Newton mechanism (Guo et al.), maths only */
typedef struct RowBatch
{
	int			count;
	double	   *x;				/* count * p, mapped */
	char	  **labels;			/* canonical label text per row (rows.c) */
	double	   *label_values;	/* and its value (squared loss) */
	int			skipped;		/* rows left out for a null (nulls => 'skip') */
} RowBatch;
/* a statement's rows with their targets, per class */
typedef struct StepRows
{
	int			count;
	const double *x;			/* count * p */
	double	   *y;				/* binary / squared target */
	int		   *cls;			/* class index (one-vs-rest) */
} StepRows;
extern void step_rows_prepare(UnlearnModel *m, RowBatch *batch, StepRows *rows);
extern bool newton_steps(UnlearnModel *m, const StepRows *rems, const StepRows *adds,
						 double *statement_bound);
extern bool newton_move_back(UnlearnModel *m, const StepRows *rems, const StepRows *adds,
							 double *u, const double *allowance);
extern void newton_exact_remainder(UnlearnModel *m, const StepRows *rems, const StepRows *adds,
								   int k, const double *w_start, double *diff);
extern double budget_limit(UnlearnModel *m);
extern bool budget_exceeded(UnlearnModel *m, const double *class_spent_after);
extern bool training_exceeds_budget(UnlearnModel *m);

/* mechanism/targets.c */
extern int	class_position(char *const *classes, int nlabels, const char *label);
extern int	label_to_target(UnlearnModel *m, const char *label, double value, double *y);

/* exec/maintain.c: one statement's change of one model */
/* one statement's raw rows for one model */
typedef struct ModelRows
{
	char	   *name;
	int			p;				/* doubles per row */
	RowBatch   *removed;		/* raw rows, unmapped */
	RowBatch   *added;
	int64		skipped_delta;	/* rows left out for a null: added less removed */
} ModelRows;
extern void maintain_model(ModelRows *rows, const char *operation, Oid caller);
extern void rethrow_lock_failure(const char *name, MemoryContext cxt);
extern bool unlearn_reanchor;
extern void removal_init(void);
extern double apply_row_changes(UnlearnModel *m, RowBatch *removed, RowBatch *added,
								 const char *retrain_reason);
extern bool class_rows_update(UnlearnModel *m, const RowBatch *removed, const RowBatch *added);
extern void retrain_or_rest(UnlearnModel *m, bool verbose, const char *why);
extern char *training_residual_detail(UnlearnModel *m);
extern char *training_residual_hint(UnlearnModel *m);
extern bool reanchor_into(UnlearnModel *m, double *matrices);

/* state_store.c */
extern int	unlearn_state_memory_mb;
extern void state_store_init(void);
extern bool state_store_available(void);
extern void state_store_require(void);
extern double *state_store_checkout(const char *model, const StateVersion *version, Size n);
extern double *state_store_buffer(const char *model, Size n);
extern double *state_store_buffer_if_room(const char *model, Size n);
extern void state_store_stage(const char *model, const double *matrices,
							  const StateVersion *version);
extern void state_store_forget(const char *model);
extern bool state_store_resident(const char *model, const StateVersion *version);
extern bool state_store_evict(const char *model);
extern char *state_store_digest(const char *model, const StateVersion *version);
extern void state_store_counters(int64 *size, int64 *entries, int64 *hits, int64 *misses,
								 int64 *evictions);

/* runtime.c */
extern void runtime_check_blas(void);

/* verify.c */
extern double exact_residual(UnlearnModel *m, const DesignMatrix *dm, double *u_out);
extern double model_accuracy(UnlearnModel *m, const DesignMatrix *dm, const double *w);
extern UnlearnModel *load_owned_model(text *name, Oid caller);

/* trigger.c */
/* the names of the triggers the extension attaches, as an SQL list */
#define UNLEARN_TRIGGER_NAMES "'unlearn_before_write', 'unlearn_after_delete', " \
	"'unlearn_after_insert', 'unlearn_after_update', 'unlearn_before_truncate', 'unlearn_after_row'"

extern void trigger_init(void);
extern RowBatch *new_row_batch(int p, int capacity);
extern void row_batch_reserve(RowBatch *batch, int p, int *capacity);
extern Oid	trained_relation(Relation rel);
extern UnlearnModel *load_model_for_change(const char *name, bool with_state);
extern void suspend_if_owner_may_not_read(UnlearnModel *m, Oid caller);
extern void suspend_for_failed_expression(UnlearnModel *m, Oid caller);
extern void apply_queued_rows(UnlearnModel *m, RowBatch *removed, RowBatch *added,
							  int64 skipped_delta, Oid caller);

/* deferred.c */
extern bool catalog_has_queued_changes(const char *name);
extern void catalog_clear_queue(const char *name);

/* progress.c: what long work reports to unlearn.progress */
extern void progress_init(void);
#define PROGRESS_BEGAN 1
#define PROGRESS_JOINED 2
#define PROGRESS_SILENT 3
extern int	progress_begin(const char *command, const char *model, Oid owner, Oid relid);
extern void progress_end(int began);
extern void progress_phase(const char *phase, int pass, int calls_per_row, int64 rows_total);
extern void progress_pass_done(int64 rows);
extern void progress_iteration(int iteration, int classes, int classes_done,
							   double gradient_norm);
extern void progress_count_row(const char *model, int len);

/* worker.c */
extern void worker_init(void);
extern void worker_note_change(UnlearnModel *m, double spent_before);

/* unlearn.c */
extern bool unlearn_changing_triggers;
extern void lock_source(Oid relid);
extern UnlearnModel *lock_source_for_owners(const char *name, Oid caller, const char *hint);

#endif							/* UNLEARN_H */
