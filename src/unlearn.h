/*-------------------------------------------------------------------------
 *
 * unlearn.h
 *	  The model's types and symbols, shared by every layer (math, mechanism,
 *	  store, exec, api: each folder's header includes the one below it).
 *
 * Symbols, defined once here and used with these meanings everywhere
 * (Guo, Goldstein, Hannun, van der Maaten, "Certified Data Removal from
 * Machine Learning Models", ICML 2020; docs/certified-removal.md):
 *
 *	x_i		a row mapped into the model's feature space, ||x_i|| <= 1
 *			(the map is x -> (x, 1) / max(s, ||(x, 1)||), see features.c)
 *	p		length of x_i: d input features plus one for the intercept
 *	w		the released weights (one vector per one-vs-rest class)
 *	b		the objective-perturbation noise: b ~ N(0, sigma^2 I_p), or with
 *			density ~ exp(-||b|| / sigma) (Theorem 3 i; 0 for fisher)
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
 * and of Fisher scrubbing (Golatkar, thesis ch. 2; mechanism/fisher.c):
 *
 *	z		the release noise, z ~ N(0, c H^-1), drawn afresh for every
 *			release: the model publishes w + z and keeps w secret
 *	c		its scale, chosen so that each release's bound is nats
 *	kappa	a release's KL bound in nats, against the exact minimiser of
 *			the rows left with the same noise
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_H
#define UNLEARN_H

#include "postgres.h"
#include "fmgr.h"
#include "storage/itemptr.h"
#include "nodes/pg_list.h"
#include "lib/stringinfo.h"
#include "utils/array.h"

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
/* how a model forgets (mechanism/mechanism.h) */
typedef enum UnlearnMechanism
{
	MECHANISM_NEWTON,			/* Newton removal (exact for least squares) */
	MECHANISM_NOISY_GD,			/* Noisy-GD, stateless (seed 002) */
	MECHANISM_FISHER			/* Newton removal without objective noise, each
								 * release scrubbed with noise shaped by H
								 * (seed 001) */
} UnlearnMechanism;

/* the distribution of the objective noise b (Theorem 3) */
typedef enum UnlearnNoise
{
	NOISE_GAUSSIAN,				/* b ~ N(0, sigma^2 I): (eps, delta) */
	NOISE_LAPLACE				/* density ~ exp(-||b|| / sigma): pure eps */
} UnlearnNoise;

typedef enum UnlearnPreprocess
{
	PREPROCESS_STANDARDIZE,		/* centre and spread of the rows, on a grid */
	PREPROCESS_DECLARED,		/* centre and spread given at training */
	PREPROCESS_NONE				/* the identity */
} UnlearnPreprocess;

/*
 * What a null in a model column does.  Under NULLS_IMPUTE a missing
 * feature value (a null, a null element, or a value that is not a finite
 * number) is NaN in a row's raw values, and the row map sends it to the
 * column's centre (column_map.c); NaN means nothing else there.
 */
typedef enum UnlearnNulls
{
	NULLS_ERROR,				/* a null is an error */
	NULLS_SKIP,					/* a row with a null is outside the model */
	NULLS_IMPUTE				/* a missing feature is the column's centre; a
								 * row with a null label is outside */
} UnlearnNulls;

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
/* the largest KL bound a fisher model may aim at per release */
#define UNLEARN_MAX_NATS 1000.0
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
/*
 * The secret removal state of a model (unlearn.model_state, and the
 * matrices in the state store): loaded only by catalog_load_model
 * with_state, for the mechanisms and the passes that rebuild it; never
 * released, and readable in the catalog by the model's owner alone.
 */
typedef struct ModelState
{
	double	   *noise;			/* K * p: b */
	double	   *anchor;			/* K * p: w0 */
	double	   *factor;			/* K * p(p+1)/2: packed lower Cholesky of H */
	double	   *gram;			/* p(p+1)/2: packed lower K' */
	double		gram_bound;		/* rigorous upper bound on lambda_max(K') */
	double	   *class_spent;	/* K: beta_k */
	double	   *weight_sum;		/* K: C_k = sum_i l''(w0_k.x_i) over current rows */
	double	   *column_sums;	/* 2 per column: S1, S2 ('standardize') */
	int64	   *class_rows;		/* nlabels: rows per label of a classifier */
	double	   *weights;		/* fisher: K * p, the secret w (coef once loaded) */
	double		release_scale;	/* fisher: c, the release's noise is N(0, c H^-1) */
	int64		release_changes;	/* fisher: removed + inserted when loaded */
	double	   *state_buffer;	/* factor and gram in one state_store buffer */
	StateVersion version;		/* of the state loaded or written last */
} ModelState;

/* what one call (a statement's change, a training) did: never stored */
typedef struct ModelCall
{
	Oid		   *feature_base_types; /* base types of the features (rows.c), or NULL */
	int			reanchors_now;	/* re-anchorings in this call (0 or 1) */
	bool		retrained_now;	/* (re)trained in this call: rewrite b and w0 */
	bool		anchor_changed; /* re-anchored in this call: rewrite w0 */
	bool		gram_changed;	/* K' changed in this call: rewrite its blocks */
	bool		rebuilt_now;	/* matrices rebuilt in this call (not resident) */
	Oid			changed_by;		/* the role whose statement changes it, or
								 * InvalidOid (training, the worker) */
	int			figures_readable;	/* by changed_by: 0 not yet asked, 1
									 * yes, -1 no (caller_reads_figures) */
	struct CohortChange *cohorts;	/* the cohorts this change touches
									 * (exec/cohorts.c), or NULL */
	List	   *erased_cohorts; /* of ErasedCohort: for the ledger */
	List	   *whole_cohorts;	/* of CohortStats: removed whole, rows not read */
	int64		whole_rows;		/* their rows */
	int			finite_check;	/* "nulls": "skip" leaves out rows with a value
								 * that is not finite: 0 not yet asked, 1 yes,
								 * -1 no (a catalog before 0.20.0) */
	bool		no_nonfinite_rows;	/* a census under this call's lock found no
									 * row with a value that is not finite: the
									 * passes need not look for one */
	struct CategoryGroups *category_groups; /* its category() groups
											 * (feature_expr.c), or NULL not
											 * yet asked */
	double		release_nats;	/* fisher: the KL bound of the release this call
								 * wrote, or -1 if it wrote none */
	int		   *taken_groups;	/* per taken column, the first feature and the
								 * categories of its group (taken_categories.c),
								 * or NULL not yet asked */
	bool		categories_taken;	/* take_categories ran in this call */
	bool		features_retaken;	/* and changed the features: the catalog
									 * writes them */
} ModelCall;

/* the cohorts a change erased whole: their ledger line */
typedef struct ErasedCohort
{
	int64		rows;
	int			cohorts;
	double		bound;			/* what they spent */
	bool		measured;		/* certified by measuring the residual */
} ErasedCohort;

/*
 * What the user declared and what a (re)training fixes, stored in
 * unlearn.models: changes only when the model is created or (re)trained.
 */
typedef struct ModelDefinition
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
	UnlearnLoss loss;
	int			dims;			/* d */
	bool		intercept;
	int			p;				/* d + intercept */
	double		intercept_scaling;	/* a: the intercept's coordinate before D */
	int			spread_steps;	/* steps of the spread grid per power of two */
	bool		classes_declared;	/* classes fixed at training, not the rows' */
	UnlearnPreprocess preprocess;	/* where centre and spread come from */
	UnlearnNulls nulls;
	double		lambda;
	double		sigma;			/* the scale of b: its standard deviation per
								 * coordinate (gaussian), or of ||b|| (laplace) */
	UnlearnNoise noise;
	double		nats;			/* fisher: the KL bound aimed at per release */
	double		epsilon;
	double		delta;
	UnlearnBound bound;
	bool		retrain_on_exhausted;	/* else suspend */
	bool		per_row_steps;
	bool		deferred;		/* "removal": "deferred" or "async": changes
								 * queue in unlearn.pending */
	bool		async_apply;	/* "removal": "async": the maintenance worker
								 * applies the queue, and the model serves
								 * the version of its last apply meanwhile */
	double		scale;			/* D of the row map (column_map.c) */
	double	   *centre;			/* map_columns(m) each; NULL: identity */
	double	   *spread;
	double		reg;			/* Lambda, lambda * n frozen at (re)training */
	double		budget;			/* eps' (Noisy-GD: the deletion epsilon aimed at) */
	UnlearnMechanism mechanism;
	double		step_size;		/* Noisy-GD: eta */
	int64		training_steps; /* Noisy-GD: steps of a training */
	int			given_parameters;	/* Noisy-GD: GIVEN_* set by unlearn_train */
	char	   *cohort;			/* the cohort column, or NULL (mechanism/cohort.c) */
	char	   *filter;			/* the row filter's canonical text (a boolean
								 * expression over the row), or NULL: the model
								 * reads every row */
	char	  **taken_columns;	/* the columns of category(column) features:
								 * their categories are taken from the rows
								 * (exec/taken_categories.c) */
	int			ntaken;
} ModelDefinition;

/* the Noisy-GD parameters unlearn_train may be given (given_parameters) */
#define GIVEN_NOISE 1
#define GIVEN_STEP_SIZE 2
#define GIVEN_TRAINING_STEPS 4
/* the most steps of a Noisy-GD training, and so of any change */
#define NOISY_GD_MAX_TRAINING_STEPS INT64CONST(100000)

/*
 * The released weights and the public figures of unlearn.models: changes
 * with every change of the model's rows (and at every (re)training).
 */
typedef struct ModelRelease
{
	ModelStatus status;
	int			nclasses;		/* K: number of weight vectors (1 unless OvR) */
	int			nlabels;		/* number of distinct labels kept in classes */
	char	  **classes;		/* label values as text */
	double		spent;			/* beta, l2 over classes */
	double	   *coef;			/* K * p (zeros unless READY) */
	int64		rows;
	int64		skipped;		/* rows outside the model for a null */
	int64		trained_rows;
	int64		removed;
	int64		inserted;
	int			retrains;
	/* Noisy-GD's public accounting (renyi.c); spent is its deletion epsilon */
	int64		gd_steps;		/* steps since the last training, its own included */
	int64		fewest_rows;	/* the fewest rows since the last training */
	/* fisher: coef is w once the state is loaded, and published w + z */
	double	   *published;		/* K * p, as stored in unlearn.models.coef */
	double		nats_spent;		/* the KL bounds of every release after a change */
} ModelRelease;

/*
 * A model: its definition (fixed at training), what it releases (w and
 * the figures of unlearn.models, changed by every change), its secret
 * state, and the bookkeeping of the current call.
 */
typedef struct UnlearnModel
{
	ModelDefinition def;		/* fixed at training, in unlearn.models */
	ModelRelease released;		/* w and the public figures, in unlearn.models */
	ModelState	state;			/* secret (catalog_load_model with_state) */
	ModelCall	call;			/* this call's bookkeeping */
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

/* newton and fisher keep the removal state of the Newton step; noisy_gd none */
#define MODEL_KEEPS_STATE(m) ((m)->def.mechanism != MECHANISM_NOISY_GD)

/*
 * a fisher classifier keeps its w secret (state.weights) and publishes
 * w + z; fisher least squares publishes its refit
 */
#define MODEL_HIDES_WEIGHTS(m) \
	((m)->def.mechanism == MECHANISM_FISHER && (m)->def.loss == LOSS_LOGISTIC)

/* only the guo bound needs K' (and so keeps it, down-dated like H) */
#define MODEL_HAS_GRAM(m) ((m)->def.bound == BOUND_GUO)

/* doubles of m's removal matrices: the K factors, then K' if kept */
static inline Size
model_matrix_doubles(const UnlearnModel *m)
{
	return PACKED_SIZE(m->def.p) *
		(m->released.nclasses + (MODEL_HAS_GRAM(m) ? 1 : 0));
}

/* point m's factor and K' into matrices (that layout), or all at NULL */
static inline void
model_point_matrices(UnlearnModel *m, double *matrices)
{
	m->state.state_buffer = m->state.factor = matrices;
	m->state.gram = (matrices != NULL && MODEL_HAS_GRAM(m)) ?
		matrices + PACKED_SIZE(m->def.p) * m->released.nclasses : NULL;
}

/* a batch of rows of one statement (or queue) for one model */
typedef struct RowBatch
{
	int			count;
	double	   *x;				/* count * p, mapped */
	char	  **labels;			/* canonical label text per row (rows.c) */
	double	   *label_values;	/* and its value (squared loss) */
	char	  **cohorts;		/* the cohort key per row (NULL: none), or NULL
								 * when the model has no cohort column */
	int			skipped;		/* rows left out for a null ("nulls": "skip") */
} RowBatch;

/*
 * The statistics of one cohort c of a model (mechanism/cohort.c), over the
 * rows of c the model reflects, at the anchor a_k of each class k (w0_k;
 * the origin for least squares, whose Hessian does not depend on w):
 *
 *	H_c		sum_i l''(a_k.x_i) x_i x_i', packed lower, K of them
 *	g_c		sum_i l'(a_k.x_i, y_ik) x_i, K of them
 *	C_c, M_c, W_c	per class: sum_i l''(a_k.x_i) over the rows, and the
 *			sums of |l'| and l'' over every update since the last rebuild
 *			(the size of the terms whose rounding the statistics carry)
 *	N_c		one number: the updates since the last rebuild
 *	n_c		a classifier's rows per label (nlabels, as class_rows)
 *	S_c		a 'standardize' model's column sums S1, S2 of the rows (as
 *			column_sums)
 *
 * stored in unlearn.cohorts as one buffer in this order, of
 * cohort_doubles(m) doubles (mechanism/cohort.c, store/cohort_store.c).
 */
typedef struct CohortStats
{
	char	   *key;			/* the cohort value as its type's output text */
	int64		rows;
	double	   *buffer;			/* H_c, g_c, C_c M_c W_c, N_c, n_c, S_c */
	bool		changed;		/* to be written */
	bool		erased;			/* to be deleted */
	bool		fresh;			/* not yet in the catalog */
} CohortStats;

/* the longest cohort key kept: a longer one's rows are forgotten row by row */
#define COHORT_MAX_KEY 256

#endif							/* UNLEARN_H */
