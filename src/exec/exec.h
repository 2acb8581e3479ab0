/*-------------------------------------------------------------------------
 *
 * exec.h
 *	  The exec layer: reading rows, feature expressions, training passes,
 *	  one statement's change end to end (maintain.c), the triggers, the
 *	  worker, privileges and locks.  Calls go to the store, mechanism and
 *	  math layers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_EXEC_H
#define UNLEARN_EXEC_H

#include "store/store.h"
#include "executor/tuptable.h"
#include "utils/hsearch.h"
#include "utils/tuplestore.h"

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
/* train_pass.c: training and re-anchoring by aggregate passes */
extern void residual_passes(UnlearnModel *m, double *g, double *allowance);
extern bool certify_by_measuring(UnlearnModel *m, double *measured);
extern bool reanchor_passes(UnlearnModel *m, double *factor, double *weight_bound,
							double *g, double *allowance, int64 *rows);
/* pass_rows.c: the row functions of a training pass */
extern Datum row_map_array(const UnlearnModel *m);
/* features.c */
extern bool feature_values_finite(const double *raw, int d);
extern void check_feature_values(const double *raw, int d, const char *model);
extern void resolve_features(UnlearnModel *m, Oid relid, ArrayType *features,
							 const char *label);
extern void resolve_filter(UnlearnModel *m, Oid relid, const char *text);
extern void verify_source_columns(UnlearnModel *m);
extern List *model_read_columns(UnlearnModel *m);
extern bool model_reads_column(UnlearnModel *m, const char *column);
extern void refuse_column_change(UnlearnModel *m, const char *column, const char *change);
/* feature_expr.c */
#define feature_is_expression(m, j) ((m)->def.is_expression != NULL && (m)->def.is_expression[j])
typedef struct FeatureEvaluator FeatureEvaluator;
extern int	pin_expression_settings(void);
extern void unpin_expression_settings(int level);
extern List *feature_expr_column_names(const char *text, const char *model);
extern Node *feature_expr_parse(const char *text, Oid relid, const char *model,
								bool linear, Oid *result_type);
extern List *category_feature_texts(const char *text, Oid relid, const char *model, char **taken);
extern List *category_group_texts(const char *column, Oid type, char **canonical, int n);
extern Oid	category_column_type(Oid relid, const char *column, const char *feature, const char *model);
extern char *category_value(const char *value, Oid type, const char *feature, const char *model);
extern bool category_group_of_column(UnlearnModel *m, const char *column, bool compare, int *first,
									 char ***categories, int *n);

/* taken_categories.c */
extern void check_taken_categories(UnlearnModel *m);
extern bool take_categories(UnlearnModel *m);
extern void taken_categories_forget(UnlearnModel *m);
extern bool taken_other_set(UnlearnModel *m, const double *x);
extern const char *taken_categories_retrain_reason(UnlearnModel *m, int64 rows_after,
												   const RowBatch *added, bool other_entered);

/*
 * The category() groups among a model's features: consecutive feature
 * expressions, one per declared category and "other", that one call of
 * unlearn._category_values computes in one lookup per row.
 */
typedef struct CategoryGroups
{
	int		   *length;			/* per feature: at a group's first feature,
								 * its length; -1 at its other features; 0
								 * outside groups */
	char	  **sql;			/* at a group's first feature: the SQL of the
								 * call, a float8[] of the group's values */
} CategoryGroups;
extern CategoryGroups *model_category_groups(UnlearnModel *m);
extern bool feature_in_category_group(UnlearnModel *m, int j);
extern void expand_category_columns(UnlearnModel *m, Datum *values, bool *isnull);
extern Node *filter_expr_parse(const char *text, Oid relid, const char *model,
							   bool linear, Oid *result_type);
extern char *feature_expr_canonical(Node *expr, Oid relid);
extern char *feature_sql(UnlearnModel *m, int j);
extern List *feature_column_names(UnlearnModel *m, int j);
extern FeatureEvaluator *feature_evaluator_create(UnlearnModel *m, TupleDesc desc, bool with_filter);
extern bool feature_evaluator_selects(FeatureEvaluator *fe, TupleTableSlot *slot);
extern Node *model_filter_parse(UnlearnModel *m, Oid relid);
extern char *model_filter_sql(UnlearnModel *m);
extern char *model_rows_of(UnlearnModel *m, const char *relation);
extern void feature_evaluator_fill(FeatureEvaluator *fe, TupleTableSlot *slot,
								   Datum *values, bool *isnull);
extern void feature_evaluator_reset(FeatureEvaluator *fe);
extern void feature_evaluator_free(FeatureEvaluator *fe);
/* rows.c */
extern bool is_numeric_scalar(Oid base);
extern bool is_feature_scalar(Oid base);
extern bool model_skips_nonfinite(UnlearnModel *m);
extern char *model_finite_condition(UnlearnModel *m);
extern char *model_missing_condition(UnlearnModel *m, bool with_label);
extern bool array_has_nonfinite_element(Datum arr);

/* features per call of a row function (a function takes at most 100 arguments) */
#define FEATURES_PER_CALL 90
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
extern void append_model_row_condition(UnlearnModel *m, StringInfo cond, int param,
									   bool rows_filtered);
extern int	execute_with_model_condition(UnlearnModel *m, const char *sql, long count);
extern int	extract_float_array(Datum arr, double *out, int expected, const char *what);
extern int	extract_float_array_missing(Datum arr, double *out, int expected, const char *what);
extern void mark_missing_values(double *raw, int d);
extern char *build_feature_select(UnlearnModel *m, const char *relation,
								  const char *trailing);
extern char *build_model_select(UnlearnModel *m, const char *relation, const char *extra);
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
extern char *slot_row_cohort(SlotRowReader *reader, TupleTableSlot *slot);
extern bool slot_row_filtered(SlotRowReader *reader);
extern bool expression_error_of_row(const ErrorData *edata);
extern RowBatch *new_row_batch(int p, int capacity);
extern void row_batch_reserve(RowBatch *batch, int p, int *capacity);
extern void row_batch_keep(int p, RowBatch *out, const RowBatch *in, int i);
/* rows.c: the values that name cohorts (cohorts.c) */
extern bool cohort_type_supported(Oid type);
extern char *cohort_key(Oid base, Datum d);
extern const char *cohort_collation(Oid base);
extern void slot_row_reader_end(SlotRowReader *reader);
/* noisy_gd_run.c */
extern int	unlearn_noisy_gd_memory;
extern void noisy_gd_init(void);
extern void noisy_gd_train(UnlearnModel *m, bool verbose);
extern double noisy_gd_apply_change(UnlearnModel *m, int64 rows_changed);
/* train_pass.c: the fit of a training's summary; gradient passes for Noisy-GD */
extern double model_training_fit(UnlearnModel *m);
extern void *gradient_passes_begin(UnlearnModel *m, const char *command);
extern void gradient_pass(void *arg, const double *w, double *gradient_sum);
extern int64 gradient_pass_rows(void *arg);
extern void gradient_passes_end(void *arg);
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
extern bool fit_class_chord(UnlearnModel *m, const DesignMatrix *dm, int k, const double *b,
							const double *factor, double *w);
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
/* canaries.c: a membership audit's rows, through the table's own writes */
extern void canaries_insert(UnlearnModel *m, int count, char **labels, const double *x,
							Oid *oids, ItemPointerData *tids);
extern int64 canaries_delete(UnlearnModel *m, int count, const Oid *oids,
							 const ItemPointerData *tids);
extern int	canaries_forget(UnlearnModel *m, const char *forget, int nkeep, const Oid *keep_oids,
							const ItemPointerData *keep_tids, double **raw, char ***labels);
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
extern void catalog_queries_without_jit(void);
extern void enter_table_owner_context(Oid relid, ExtensionContext *ctx);
extern void check_model_owner(UnlearnModel *m, Oid caller);
extern void check_model_or_table_owner(UnlearnModel *m, Oid caller, const char *hint);
extern void check_may_read_rows(UnlearnModel *m, Oid relid, Oid role, const char *doing,
								const char *why, const char *instead);
extern void check_can_train(UnlearnModel *m, Oid relid, Oid caller);
extern bool model_owner_may_read(UnlearnModel *m);
extern bool model_owner_owns_table(UnlearnModel *m);
extern bool may_read_model(const char *name, Oid owner, Oid role, bool weights);
extern void check_model_read(const char *name, Oid owner, Oid caller, bool weights);
/* privilege.c: access to a model */
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
/* exec/maintain.c: one statement's change of one model */
/* one statement's raw rows for one model */
typedef struct ModelRows
{
	char	   *name;
	int			p;				/* doubles per row */
	RowBatch   *removed;		/* raw rows, unmapped */
	RowBatch   *added;
	int64		skipped_delta;	/* rows left out for a null: added less removed */
	List	   *whole;			/* of WholeCohort: cohorts removed whole, their
								 * rows not read (cohorts.c) */
	const char *retrain_reason; /* retrain instead of a step: rows that
								 * cannot be applied one by one, or NULL */
	bool		other_entered;	/* a row entered with a taken group's "other"
								 * set, cancelled or not (taken_other_set) */
	UnlearnModel *loaded;		/* or NULL: the definition, its row locked
								 * (by the query's BEFORE trigger or by
								 * lock_model_for_change), that the rows
								 * were decoded with in the memory of the
								 * call that applies them */
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
extern void suspend_if_owner_may_not_read(UnlearnModel *m, Oid caller);
extern void suspend_for_failed_expression(UnlearnModel *m, Oid caller);
extern void retrain_after_rows_left(UnlearnModel *m, Oid caller, const char *operation,
									const char *why);

/* runtime.c */
extern void runtime_check_blas(void);
/* trigger.c */
/* the names of the triggers the extension attaches, as an SQL list */
#define UNLEARN_TRIGGER_NAMES "'unlearn_before_write', 'unlearn_after_delete', " \
	"'unlearn_after_insert', 'unlearn_after_update', 'unlearn_before_truncate', 'unlearn_after_row'"

extern void trigger_init(void);
extern Oid	trained_relation(Relation rel);
extern bool statement_writing(Oid root);
extern void writing_statements_init(void);
extern uint64 writing_copy_begin(void);
extern void writing_copy_end(uint64 copy);
extern UnlearnModel *load_model_checked(const char *name, bool with_state, bool for_update,
										ErrorData **corruption);
extern UnlearnModel *load_model_for_change(const char *name, bool with_state);
extern UnlearnModel *lock_model_for_change(const char *name);
extern UnlearnModel *load_model_keeping_row(const char *name, MemoryContext cxt, HeapTuple *row,
											TupleDesc *desc);
extern void apply_queued_rows(UnlearnModel *m, RowBatch *removed, RowBatch *added,
							  int64 skipped_delta, const char *retrain_reason, Oid caller);
/* privilege.c: the role that created the extension, a superuser */
extern Oid	extension_owner(void);
extern Oid	table_owner(Oid relid);
/* citus_guard.c */
extern void citus_guard_utility(Node *stmt);
extern void citus_guard_shard_triggers(Oid caller);
extern void citus_guard_dropped_shard_triggers(Oid caller);
/* deferred.c */
extern int64 apply_async_queue(const char *name);
extern bytea *encode_queued_row(int p, const double *raw, const char *label, double label_value,
								const char *cohort);
/* model_cache.c */
extern List *cached_models_of_relation(Oid relid);
extern UnlearnModel *cached_model_for_change(const char *name);
extern bool cached_may_have_immediate_models(Oid relid);
/* worker.c */
extern void worker_init(void);
extern void worker_note_change(UnlearnModel *m, double spent_before);
extern void worker_note_queued(void);
extern void worker_request_apply(void);
extern bool worker_applies(void);
/* locks.c, and the DDL guard of api/unlearn.c */
extern void refuse_in_statement(Oid relid, const char *what);
extern void lock_source(Oid relid);
extern UnlearnModel *lock_source_for_owners(const char *name, Oid caller, const char *hint);
extern void bind_relation_columns(UnlearnModel *m, Oid relid, bool with_label);

/* cohorts.c: a model's cohorts (see its header) */
typedef struct CohortChange CohortChange;
typedef struct WholeCohort
{
	char	   *key;
	int64		rows;
} WholeCohort;
extern HTAB *cohorts_whole_in_transition(UnlearnModel *m, Tuplestorestate *ts, Relation rel,
										 List **whole);
extern bool cohorts_erase_listed(UnlearnModel *m, List *whole, bool pure);
#define COHORTS_TAKEN 0
#define COHORTS_CHANGED 1
#define COHORTS_MOVED 2
extern int	cohorts_take_whole(UnlearnModel *m, List *whole, List **stats);
extern int	unlearn_cohort_memory;
extern void cohorts_init(void);
extern void check_cohort_column(UnlearnModel *m, Oid relid, const char *column);
extern char *default_cohort_column(UnlearnModel *m, Oid relid);
extern CohortChange *cohort_change_begin(UnlearnModel *m, const RowBatch *removed,
										 const RowBatch *added);
extern RowBatch *cohorts_erase_whole(UnlearnModel *m, RowBatch *removed, const RowBatch *added);
extern bool cohorts_erase_counted(UnlearnModel *m, char **keys, const int64 *counts, int n);
extern void cohorts_after_change(UnlearnModel *m, RowBatch *removed, RowBatch *added);
extern void cohorts_rebuild(UnlearnModel *m);
extern int64 cohorts_write_ledger(UnlearnModel *m);

/* partition_erasure.c: rows that leave without a statement (see its header) */
extern void partition_erasure_init(void);
extern bool partition_erasure_prepare(Node *stmt);
extern void partition_erasure_clear(void);
extern List *partition_erasure_save(void);
extern void partition_erasure_restore(List *saved);
extern void partition_erasure_finish(void);
extern bool partition_erasure_allows_truncate(Oid relid);
extern bool partition_erasure_apply(UnlearnModel *m, List *lost);

/* subtransaction.c */
extern ErrorData *run_in_subtransaction(void (*work) (void *arg), void *arg,
										bool (*survivable) (const ErrorData *edata, void *arg));

#endif							/* UNLEARN_EXEC_H */
