/*-------------------------------------------------------------------------
 *
 * store.h
 *	  The store layer: the catalog tables (models, state, ledger, grants,
 *	  queue) through named accessors, the shared-memory state store and the
 *	  progress slots.  Invariants are stated in each file's header.  Calls go
 *	  to the mechanism and math layers only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef UNLEARN_STORE_H
#define UNLEARN_STORE_H

#include "mechanism/mechanism.h"
#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/relcache.h"

/* arrays.c: SQL arrays of the catalog's values */
extern Datum float8_array(const double *v, int n);
extern Datum int8_array(const int64 *v, int n);
extern Datum coef_array(const double *coef, int nclasses, int p);
extern Datum cstring_text_array(char **v, int n);
/* catalog.c */
extern UnlearnModel *catalog_load_model(const char *name, bool with_state, bool for_update,
										bool missing_ok);
extern UnlearnModel *catalog_load_model_keeping_row(const char *name, MemoryContext cxt,
													HeapTuple *row, TupleDesc *desc);
extern UnlearnModel *catalog_model_from_row(const char *name, HeapTuple row, TupleDesc desc);
typedef struct ModelRef
{
	char	   *name;
	Oid			owner;
	bool		deferred;		/* "removal": "deferred" */
} ModelRef;
extern List *model_refs_copy(const List *refs);
extern List *catalog_models_of_relation(Oid relid);
extern List *catalog_lock_immediate_models(Oid relid);
extern void catalog_read_latest(bool on);
extern List *catalog_ready_models(double share, bool every);
extern double catalog_measured_spent(const char *name);
extern void catalog_load_model_state(UnlearnModel *m, bool for_update);
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
extern bool catalog_has_finite_check(void);
extern bool catalog_has_imputation(void);
extern bool catalog_has_row_filters(void);
extern bool catalog_has_category_values(void);
extern bool catalog_has_taken_categories(void);
extern void catalog_write_features(UnlearnModel *m);
extern bool catalog_has_async_removal(void);
/* trigger_ddl.c */
extern bool unlearn_changing_triggers;
extern char *relation_qualified_name(Oid relid);
extern void run_trigger_ddl(List *commands, const char *table);
/* citus_queue.c: the name of every model's shard trigger begins so */
#define UNLEARN_SHARD_TRIGGER_PREFIX "unlearn_shard_"
extern char citus_distribution(Oid relid);
extern bool citus_is_coordinator(void);
extern bool citus_is_shard(Oid relid);
extern void citus_check_distribution_column(Oid relid);
extern char *citus_queue_name(const char *table);
extern char *citus_trigger_name(const char *model);
extern void citus_prepare_model(UnlearnModel *m);
extern void citus_attach_model(UnlearnModel *m);
extern void citus_detach_model(const char *model, Oid relid, bool last);
extern void citus_take_queue(const char *model, Oid relid);
extern void citus_clear_queue(const char *model, Oid relid);
extern bool citus_queue_has_entries(const char *model, Oid relid);
extern void citus_drop_queue(const char *table);
/* catalog_generation.c */
extern bool catalog_generation_usable(uint64 *now);
extern void catalog_generation_init(void);
extern bool catalog_has_lean_passes(void);
extern double catalog_mean_bound_per_row(const char *name, Oid owner);
extern bool catalog_has_grants(void);
extern bool catalog_model_granted(const char *name, Oid role, bool weights);
extern bool catalog_model_written_here(const char *name);
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
/* cohort_store.c: unlearn.cohorts (see its header) */
extern CohortStats *cohort_new(const UnlearnModel *m, const char *key);
extern List *cohort_store_load(UnlearnModel *m, char **keys, int n);
extern void cohort_store_rows(UnlearnModel *m, char **keys, int64 *rows, int n);
extern void cohort_store_write(UnlearnModel *m, List *cohorts);
extern void cohort_store_clear(const char *name);
extern bool catalog_has_cohorts(void);
/* catalog.c: the queue of deferred models */
extern bool catalog_has_queued_changes(const char *name);
extern void catalog_clear_queue(const char *name);
extern void catalog_note_apply(const char *name, const char *error);
extern List *catalog_async_models_due(int max_backoff);
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

#endif							/* UNLEARN_STORE_H */
