/*-------------------------------------------------------------------------
 *
 * cohorts.c
 *	  A model's cohorts end to end: the cohort column and its values, the
 *	  cohorts a statement erases whole, keeping the statistics of the
 *	  others in step with its rows, and rebuilding them all by one pass
 *	  over the table when the anchor moves.  The maths is
 *	  mechanism/cohort.c's, the storage store/cohort_store.c's (whose
 *	  header states the invariants kept here).
 *
 * A statement erases cohort c whole when it removes as many of c's rows
 * as the model reflects and adds none: its rows then leave by the
 * mechanism's erase (one O(p^3) step per class from c's statistics)
 * instead of a step over the rows, with a ledger line of operation
 * "cohort".  If that step's bound does not fit the budget, the residual of
 * the rows left is measured instead (when the statement changed nothing
 * else); if that does not fit either, or H - H_c is not positive
 * definite, the model is put back as it was and the rows go the usual way
 * (the budget rule then re-anchors or retrains).  A DELETE on a table
 * whose rows are all in the model finds such cohorts from the keys of its
 * rows alone, and never decodes their rows (cohorts_whole_in_transition).
 *
 * Cost: O(k) hash lookups for a statement's k rows to find their cohorts,
 * one catalog read of the cohorts they touch, O(p^2) per row and class to
 * keep those in step, and a pass over the table, O(n p^2), whenever the
 * anchor moves (a training, a re-anchoring, a rebuild of the matrices).
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include <cblas.h>

int			unlearn_cohort_memory = 64;

void
cohorts_init(void)
{
	DefineCustomIntVariable("unlearn.cohort_memory",
							"Most memory the statistics of one model's cohorts may take.",
							"The largest cohorts are kept; the rows of the others are forgotten row by row.",
							&unlearn_cohort_memory, 64, 0, MAX_KILOBYTES / 1024, PGC_SUSET,
							GUC_UNIT_MB, NULL, NULL, NULL);
}




/*
 * Check unlearn_train's cohort column of relid: it exists, is not a model
 * column, and has a type that names cohorts.
 */
void
check_cohort_column(UnlearnModel *m, Oid relid, const char *column)
{
	AttrNumber	att = get_attnum(relid, column);

	if (att <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("cohort column \"%s\" does not exist in table %s", column,
						relation_qualified_name(relid)),
				 errhint("Name a column of the table whose values are cohorts, such as a tenant's key.")));
	if (!cohort_type_supported(get_atttype(relid, att)))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cohort column \"%s\" has type %s", column,
						format_type_be(get_atttype(relid, att))),
				 errhint("A cohort column is smallint, integer, bigint, text, varchar, uuid or boolean.")));
	if (model_reads_column(m, column))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cohort column \"%s\" is a feature or the label of model \"%s\"", column,
						m->def.name),
				 errhint("Name a column the model does not read otherwise.")));
	if (!MODEL_KEEPS_STATE(m) ||
		(m->def.loss == LOSS_LOGISTIC && m->def.bound != BOUND_TAYLOR))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" cannot keep cohorts: %s", m->def.name,
						!MODEL_KEEPS_STATE(m) ? "Noisy-GD keeps no statistics" :
						"a classifier's cohort erasure is bounded in the taylor form"),
				 errhint("Cohorts need mechanism 'newton' or 'fisher' and, for a classifier, bound 'taylor' (the default).")));
}

/*
 * The cohort column m takes by default on relid: on a table partitioned
 * BY LIST on one column that could be a cohort column (a type that names
 * cohorts, a deterministic collation, not a column the model reads, a
 * model that can keep cohorts), that column, so that its partitions are
 * cohorts; else NULL.
 */
char *
default_cohort_column(UnlearnModel *m, Oid relid)
{
	Relation	rel;
	PartitionKey key;
	char	   *column = NULL;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE || !MODEL_KEEPS_STATE(m) ||
		(m->def.loss == LOSS_LOGISTIC && m->def.bound != BOUND_TAYLOR) ||
		!catalog_has_cohorts())
		return NULL;
	rel = relation_open(relid, AccessShareLock);
	key = RelationGetPartitionKey(rel);
	if (key != NULL && key->strategy == PARTITION_STRATEGY_LIST && key->partnatts == 1 &&
		key->partattrs[0] > 0 &&
		cohort_type_supported(TupleDescAttr(RelationGetDescr(rel), key->partattrs[0] - 1)->atttypid) &&
		(!OidIsValid(key->partcollation[0]) || get_collation_isdeterministic(key->partcollation[0])))
		column = pstrdup(NameStr(TupleDescAttr(RelationGetDescr(rel), key->partattrs[0] - 1)->attname));
	relation_close(rel, AccessShareLock);
	if (column != NULL && model_reads_column(m, column))
		return NULL;
	return column;
}

/* --- a statement's cohorts ------------------------------------------------ */

typedef struct CohortEntry
{
	char		key[COHORT_MAX_KEY + 1];
	CohortStats *cs;
	int			removed;
	int			added;
} CohortEntry;

struct CohortChange
{
	HTAB	   *entries;		/* of CohortEntry: the kept cohorts the
								 * statement's rows touch, or NULL */
	List	   *cohorts;		/* their CohortStats, and those erased whole */
};

/* the distinct cohort keys of the batches, *count of them */
static char **
batch_keys(const RowBatch *removed, const RowBatch *added, HTAB *seen, int *count)
{
	const RowBatch *batches[2] = {removed, added};
	char	  **keys = palloc(sizeof(char *) * Max((removed ? removed->count : 0) +
												  (added ? added->count : 0), 1));
	int			b,
				i;

	*count = 0;
	for (b = 0; b < 2; b++)
		for (i = 0; batches[b] != NULL && batches[b]->cohorts != NULL && i < batches[b]->count; i++)
		{
			bool		found;

			if (batches[b]->cohorts[i] == NULL)
				continue;
			hash_search(seen, batches[b]->cohorts[i], HASH_ENTER, &found);
			if (!found)
				keys[(*count)++] = batches[b]->cohorts[i];
		}
	return keys;
}

static HTAB *
new_key_table(const char *name)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = COHORT_MAX_KEY + 1;
	ctl.entrysize = sizeof(CohortEntry);
	ctl.hcxt = CurrentMemoryContext;
	return hash_create(name, 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

/*
 * The parts of a cohort's statistics taken from raw rows (its rows per
 * label, its column sums): add (+1) or take away (-1) a raw row.
 */
static void
add_raw_row(UnlearnModel *m, CohortStats *cs, const double *raw, const char *label, double sign)
{
	double	   *sums = cohort_column_sums(m, cs);

	if (m->def.loss != LOSS_SQUARED)
	{
		int			k = class_position(m->released.classes, m->released.nlabels, label);

		if (k >= 0)
			cohort_label_rows(m, cs)[k] += sign;
	}
	if (sums != NULL)
		column_sums_of_row(m, raw, sums, sign);
	cs->changed = true;
}

static CohortEntry *entry_of(CohortChange *cc, const RowBatch *batch, int i);

/* count the rows of batch that leave (-1) or enter (+1) kept cohorts, raw */
static void
raw_rows_in_step(UnlearnModel *m, CohortChange *cc, const RowBatch *batch, double sign)
{
	int			i;

	for (i = 0; batch != NULL && i < batch->count; i++)
	{
		CohortEntry *e = entry_of(cc, batch, i);

		if (e == NULL)
			continue;
		if (sign < 0)
			e->removed++;
		else
			e->added++;
		add_raw_row(m, e->cs, batch->x + (Size) i * m->def.p, batch->labels[i], sign);
	}
}

/*
 * The tracked cohorts a statement's rows touch, with how many rows of
 * each it removes and adds, their rows per label and column sums already
 * brought to the change; NULL when there are none.  Called before the
 * change is applied (maintain.c), with the batches' rows raw.
 */
CohortChange *
cohort_change_begin(UnlearnModel *m, const RowBatch *removed, const RowBatch *added)
{
	CohortChange *cc;
	HTAB	   *seen;
	char	  **keys;
	int			nkeys;
	ListCell   *lc;

	if (m->def.cohort == NULL || m->released.status != MODEL_READY)
		return NULL;
	seen = new_key_table("unlearn statement cohort keys");
	keys = batch_keys(removed, added, seen, &nkeys);
	hash_destroy(seen);
	if (nkeys == 0)
		return NULL;
	cc = palloc0(sizeof(CohortChange));
	cc->entries = new_key_table("unlearn statement cohorts");
	cc->cohorts = cohort_store_load(m, keys, nkeys);
	foreach(lc, cc->cohorts)
	{
		CohortStats *cs = (CohortStats *) lfirst(lc);
		CohortEntry *e;

		if (cs->erased)
			continue;			/* failed its checks: deleted, rows go row by row */
		e = hash_search(cc->entries, cs->key, HASH_ENTER, NULL);
		e->cs = cs;
		e->removed = e->added = 0;
	}
	raw_rows_in_step(m, cc, removed, -1.0);
	raw_rows_in_step(m, cc, added, 1.0);
	return cc;
}

static CohortEntry *
entry_of(CohortChange *cc, const RowBatch *batch, int i)
{
	if (cc->entries == NULL || batch->cohorts == NULL || batch->cohorts[i] == NULL)
		return NULL;
	return hash_search(cc->entries, batch->cohorts[i], HASH_FIND, NULL);
}

/*
 * Erase the cohorts of whole (CohortStats, erased_rows rows in all) from
 * m: one step per cohort from its statistics; if their bounds do not fit
 * the budget and pure (m's other rows are exactly the table's now), the
 * new weights are certified by measuring the residual over the rows
 * instead (certify_by_measuring, maintain.c): O(n p) a pass, against the O(n p^2) of a
 * re-anchoring.  On success spends, lists the erasure in
 * m->call.erased_cohorts for the ledger and marks the cohorts erased;
 * otherwise leaves m as it was and returns false.  m must be ready with
 * its matrices at hand (factor not NULL).
 */
static bool
erase_cohort_list(UnlearnModel *m, List *whole, int64 erased_rows, bool pure)
{
	const Mechanism *mech = mechanism_for(m);
	int			K = m->released.nclasses;
	int			p = m->def.p;
	Size		packed = PACKED_SIZE(p);
	double	   *saved_coef = palloc(sizeof(double) * K * p);
	double	   *saved_factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * K * packed);
	double	   *saved_weight = palloc(sizeof(double) * K);
	double	   *bound = palloc0(sizeof(double) * K);
	double	   *spent_after = palloc(sizeof(double) * K);
	int64		saved_rows = m->released.rows;
	bool		ok = mech->erase != NULL;
	bool		measured = false;
	ListCell   *lc;
	int			k;

	memcpy(saved_coef, m->released.coef, sizeof(double) * K * p);
	memcpy(saved_factor, m->state.factor, sizeof(double) * K * packed);
	memcpy(saved_weight, m->state.weight_sum, sizeof(double) * K);
	foreach(lc, whole)
	{
		CohortStats *cs = (CohortStats *) lfirst(lc);

		if (!ok)
			break;
		CHECK_FOR_INTERRUPTS();
		m->released.rows -= cs->rows;
		ok = mech->erase(m, cs, bound);
	}
	for (k = 0; ok && k < K; k++)
		spent_after[k] = m->state.class_spent[k] + bound[k];
	if (ok && message_level_is_interesting(DEBUG1) && caller_reads_figures(m))
		elog(DEBUG1, "unlearn: model \"%s\": %d cohorts of %lld rows: bound %.6g, spent %.6g, limit %.6g",
			 m->def.name, list_length(whole), (long long) erased_rows, combine_class_spent(bound, K),
			 m->released.spent, budget_limit(m));
	if (ok && budget_exceeded(m, spent_after))
	{
		ok = pure && m->def.loss != LOSS_SQUARED && certify_by_measuring(m, spent_after);
		measured = ok;
	}
	if (ok)
	{
		double		before = m->released.spent;
		ErasedCohort *ec = palloc(sizeof(ErasedCohort));

		memcpy(m->state.class_spent, spent_after, sizeof(double) * K);
		m->released.spent = combine_class_spent(m->state.class_spent, K);
		ec->rows = erased_rows;
		ec->bound = measured ? Max(m->released.spent - before, 0.0) : combine_class_spent(bound, K);
		ec->cohorts = list_length(whole);
		ec->measured = measured;
		m->call.erased_cohorts = lappend(m->call.erased_cohorts, ec);
		foreach(lc, whole)
			((CohortStats *) lfirst(lc))->erased = true;
	}
	else
	{
		m->released.rows = saved_rows;
		memcpy(m->released.coef, saved_coef, sizeof(double) * K * p);
		memcpy(m->state.factor, saved_factor, sizeof(double) * K * packed);
		memcpy(m->state.weight_sum, saved_weight, sizeof(double) * K);
		if (message_level_is_interesting(DEBUG1) && caller_reads_figures(m))
			elog(DEBUG1, "unlearn: model \"%s\": %d cohorts of %lld rows are not erased from their statistics",
				 m->def.name, list_length(whole), (long long) erased_rows);
	}
	pfree(saved_coef);
	pfree(saved_factor);
	pfree(saved_weight);
	pfree(bound);
	pfree(spent_after);
	return ok;
}

/*
 * Erase from m the cohorts the statement removes whole (see the header)
 * and return the removed rows left for the usual step (all of them if
 * the cohorts could not be erased from their statistics).  The residual
 * may be measured only if the statement removes nothing else and adds
 * nothing.
 */
RowBatch *
cohorts_erase_whole(UnlearnModel *m, RowBatch *removed, const RowBatch *added)
{
	CohortChange *cc = m->call.cohorts;
	int			p = m->def.p;
	int64		erased_rows = 0;
	List	   *whole = NIL;
	ListCell   *lc;
	RowBatch   *rest;
	int			i;

	if (cc == NULL || removed == NULL)
		return removed;
	foreach(lc, cc->cohorts)
	{
		CohortStats *cs = (CohortStats *) lfirst(lc);
		CohortEntry *e = cs->erased ? NULL : hash_search(cc->entries, cs->key, HASH_FIND, NULL);

		/*
		 * a cohort of fewer than p/4 rows costs less row by row (O(p^2) a
		 * row) than refactored (O(p^3))
		 */
		if (e != NULL && e->added == 0 && e->removed == cs->rows && cs->rows * 4 >= m->def.p)
		{
			whole = lappend(whole, cs);
			erased_rows += cs->rows;
		}
	}
	if (whole == NIL ||
		!erase_cohort_list(m, whole, erased_rows,
						   erased_rows == removed->count && (added == NULL || added->count == 0)))
		return removed;

	/* the removed rows of the cohorts left */
	rest = new_row_batch(p, removed->count);
	for (i = 0; i < removed->count; i++)
	{
		CohortEntry *e = entry_of(cc, removed, i);

		if (e == NULL || !e->cs->erased)
			row_batch_keep(p, rest, removed, i);
	}
	rest->skipped = removed->skipped;
	return rest;
}

/*
 * Take the rows per label and the column sums of the cohorts of whole
 * (erased_rows rows) out of m's, and say whether its classes and (if
 * check_map) its column map and taken categories still hold (as
 * class_rows_update, taken_categories_retrain_reason and
 * column_map_update do for rows); if not, m must retrain.
 */
static bool
classes_and_map_hold(UnlearnModel *m, List *whole, int64 erased_rows, bool check_map)
{
	ListCell   *lc;
	int			k;
	bool		holds = true;

	foreach(lc, whole)
	{
		CohortStats *cs = (CohortStats *) lfirst(lc);
		double	   *labels = cohort_label_rows(m, cs);

		for (k = 0; m->def.loss != LOSS_SQUARED && m->state.class_rows != NULL &&
			 k < m->released.nlabels; k++)
			m->state.class_rows[k] -= (int64) labels[k];
	}
	if (m->def.loss != LOSS_SQUARED)
	{
		if (m->state.class_rows == NULL)
			holds = !catalog_tracks_classes();
		for (k = 0; holds && !m->def.classes_declared && m->state.class_rows != NULL &&
			 k < m->released.nlabels; k++)
			if (m->state.class_rows[k] <= 0)
				holds = false;
	}
	if (m->state.column_sums != NULL && m->def.preprocess == PREPROCESS_STANDARDIZE)
	{
		double	   *sums = palloc0(sizeof(double) * column_sum_width(m) * map_columns(m));

		foreach(lc, whole)
		{
			double	   *cs_sums = cohort_column_sums(m, (CohortStats *) lfirst(lc));

			for (k = 0; cs_sums != NULL && k < column_sum_width(m) * map_columns(m); k++)
				sums[k] += cs_sums[k];
		}
		if (!column_map_update_sums(m, sums, erased_rows) && check_map)
			holds = false;
	}
	/* a taken category whose last rows left (its rows counted by the sums) */
	if (holds && check_map && taken_categories_retrain_reason(m, m->released.rows - erased_rows, NULL, false) != NULL)
		holds = false;
	return holds;
}

/*
 * Erase from m, whose other rows are now exactly its table's, the rows of
 * the cohorts keys[0..n-1] that left the table without a statement (a
 * partition detached, dropped or truncated: partition_erasure.c), counts[i]
 * rows of the i-th key.  Each must be a cohort m keeps, with exactly that
 * many rows.  Returns false, m unchanged, if they are not or their
 * erasure cannot be certified; m->call.cohorts then holds nothing.
 */
bool
cohorts_erase_counted(UnlearnModel *m, char **keys, const int64 *counts, int n)
{
	CohortChange *cc = palloc0(sizeof(CohortChange));
	List	   *whole = NIL;
	int64		erased_rows = 0;
	ListCell   *lc;
	int			i;

	if (m->def.cohort == NULL || m->released.status != MODEL_READY || m->state.factor == NULL)
		return false;
	cc->cohorts = cohort_store_load(m, keys, n);
	foreach(lc, cc->cohorts)
	{
		CohortStats *cs = (CohortStats *) lfirst(lc);

		for (i = 0; i < n && !cs->erased; i++)
			if (strcmp(keys[i], cs->key) == 0 && counts[i] == cs->rows)
			{
				whole = lappend(whole, cs);
				erased_rows += cs->rows;
				break;
			}
	}
	if (list_length(whole) != n || !classes_and_map_hold(m, whole, erased_rows, true) ||
		!erase_cohort_list(m, whole, erased_rows, true))
		return false;
	m->call.cohorts = cc;
	return true;
}

/*
 * The statistics of the cohorts a statement removed whole without their
 * rows being read (whole, of WholeCohort: cohorts_whole_in_transition)
 * into *stats, their rows per label and column sums taken out of m's.
 * Returns COHORTS_TAKEN; COHORTS_CHANGED if a cohort's stored rows no
 * longer match (m must retrain: its rows were not read); COHORTS_MOVED if
 * a class lost its last row (m must retrain).  The caller checks the
 * column map over all the rows the statement leaves.
 */
int
cohorts_take_whole(UnlearnModel *m, List *whole, List **stats)
{
	char	  **keys = palloc(sizeof(char *) * Max(list_length(whole), 1));
	List	   *loaded;
	ListCell   *lc,
			   *lc2;
	int64		rows = 0;
	int			i = 0;

	*stats = NIL;
	foreach(lc, whole)
		keys[i++] = ((WholeCohort *) lfirst(lc))->key;
	loaded = cohort_store_load(m, keys, i);
	foreach(lc, whole)
	{
		WholeCohort *wc = (WholeCohort *) lfirst(lc);
		CohortStats *found = NULL;

		foreach(lc2, loaded)
			if (strcmp(((CohortStats *) lfirst(lc2))->key, wc->key) == 0)
				found = (CohortStats *) lfirst(lc2);
		if (found == NULL || found->erased || found->rows != wc->rows)
			return COHORTS_CHANGED;
		*stats = lappend(*stats, found);
		rows += found->rows;
	}
	return classes_and_map_hold(m, *stats, rows, false) ? COHORTS_TAKEN : COHORTS_MOVED;
}

/*
 * Erase the cohorts of whole (CohortStats from cohorts_take_whole) from m,
 * as cohorts_erase_whole does; pure if the statement changed nothing else.
 * The erased cohorts' rows are deleted from unlearn.cohorts by
 * cohorts_after_change.
 */
bool
cohorts_erase_listed(UnlearnModel *m, List *whole, bool pure)
{
	int64		rows = 0;
	ListCell   *lc;

	foreach(lc, whole)
		rows += ((CohortStats *) lfirst(lc))->rows;
	if (!erase_cohort_list(m, whole, rows, pure))
		return false;
	if (m->call.cohorts == NULL)
		m->call.cohorts = palloc0(sizeof(CohortChange));
	m->call.cohorts->cohorts = list_concat(m->call.cohorts->cohorts, whole);
	return true;
}

/* --- cohorts a DELETE removes whole, counted without reading rows ------- */

/*
 * The cohorts a DELETE's transition table ts removes whole, found from
 * their keys alone: a kept cohort whose rows all appear in ts.  That
 * needs every row of the table to be a row of the model (no row skipped
 * for a null or a label), so that the rows of a key in ts are model rows;
 * with skipped rows this returns NULL and all rows are read.  Returns the
 * keys (for read_transition to skip) and lists them with their rows in
 * *whole (in the caller's memory context).  O(k) for k rows, reading one
 * column; the rows of these cohorts are never decoded.
 */
HTAB *
cohorts_whole_in_transition(UnlearnModel *m, Tuplestorestate *ts, Relation rel, List **whole)
{
	MemoryContext caller_cxt = CurrentMemoryContext;
	TupleTableSlot *slot;
	SlotRowReader *reader;
	HTAB	   *counts;
	HTAB	   *skip;
	CohortEntry *e;
	List	   *keys = NIL;
	char	  **key_text;
	int64	   *rows;
	int			n = 0,
				i;

	*whole = NIL;
	if (m->def.cohort == NULL || m->released.status != MODEL_READY || m->released.skipped != 0 ||
		m->def.filter != NULL || !MODEL_KEEPS_STATE(m) || m->def.deferred)
		return NULL;
	counts = new_key_table("unlearn transition cohorts");
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	reader = slot_row_reader_begin(m, rel);
	tuplestore_select_read_pointer(ts, 0);
	tuplestore_rescan(ts);
	while (tuplestore_gettupleslot(ts, true, false, slot))
	{
		char	   *key = slot_row_cohort(reader, slot);
		bool		found;

		if (key == NULL)
			continue;
		e = hash_search(counts, key, HASH_ENTER, &found);
		if (!found)
		{
			e->removed = 0;
			keys = lappend(keys, e->key);
		}
		e->removed++;
		pfree(key);
	}
	slot_row_reader_end(reader);
	ExecDropSingleTupleTableSlot(slot);
	if (keys == NIL)
		return NULL;
	key_text = palloc(sizeof(char *) * list_length(keys));
	rows = palloc(sizeof(int64) * list_length(keys));
	for (i = 0; i < list_length(keys); i++)
		key_text[i] = (char *) list_nth(keys, i);
	cohort_store_rows(m, key_text, rows, list_length(keys));
	skip = new_key_table("unlearn cohorts removed whole");
	for (i = 0; i < list_length(keys); i++)
	{
		e = hash_search(counts, key_text[i], HASH_FIND, NULL);
		/* as cohorts_erase_whole: fewer than p/4 rows go row by row */
		if (rows[i] > 0 && e->removed == rows[i] && rows[i] * 4 >= m->def.p)
		{
			MemoryContext old = MemoryContextSwitchTo(caller_cxt);
			WholeCohort *wc = palloc(sizeof(WholeCohort));

			wc->key = pstrdup(key_text[i]);
			wc->rows = rows[i];
			*whole = lappend(*whole, wc);
			MemoryContextSwitchTo(old);
			hash_search(skip, key_text[i], HASH_ENTER, NULL);
			n++;
		}
	}
	hash_destroy(counts);
	if (n == 0)
	{
		hash_destroy(skip);
		return NULL;
	}
	return skip;
}

static const CohortEntry *const *sorting_entries;

static int
compare_by_entry(const void *a, const void *b)
{
	const CohortEntry *x = sorting_entries[*(const int *) a];
	const CohortEntry *y = sorting_entries[*(const int *) b];

	if (x != y)
		return x < y ? -1 : 1;
	return *(const int *) a - *(const int *) b;
}

/*
 * The rows of batch (mapped) in kept cohorts not erased, added (+1) or
 * taken away (-1): grouped by cohort, one cohort_add_rows each.
 * O(k log k + k p^2).
 */
static void
keep_in_step(UnlearnModel *m, CohortChange *cc, RowBatch *batch, double sign)
{
	StepRows	rows;
	CohortEntry **entries;
	int		   *order;
	int			n = 0,
				i,
				start;

	if (batch == NULL || batch->count == 0)
		return;
	entries = palloc(sizeof(CohortEntry *) * batch->count);
	order = palloc(sizeof(int) * batch->count);
	for (i = 0; i < batch->count; i++)
	{
		entries[i] = entry_of(cc, batch, i);
		if (entries[i] != NULL && !entries[i]->cs->erased)
			order[n++] = i;
	}
	if (n == 0)
		return;
	sorting_entries = (const CohortEntry *const *) entries;
	qsort(order, n, sizeof(int), compare_by_entry);
	step_rows_prepare(m, batch, &rows);
	for (start = 0; start < n; start = i)
	{
		for (i = start + 1; i < n && entries[order[i]] == entries[order[start]]; i++)
			;
		cohort_add_rows(m, entries[order[start]]->cs, &rows, order + start, i - start, sign);
	}
}

/*
 * After a change was applied to m (maintain.c): bring the statistics of
 * the cohorts to where m is.  If the anchor moved (a training, a
 * re-anchoring, a rebuild; for least squares only a training, which may
 * change the row map), all are rebuilt by a pass; else the touched ones
 * take the rows of removed (not erased) and added, already mapped.
 */
void
cohorts_after_change(UnlearnModel *m, RowBatch *removed, RowBatch *added)
{
	CohortChange *cc = m->call.cohorts;

	ListCell   *lc;

	if (m->def.cohort == NULL || m->released.status != MODEL_READY)
		return;					/* catalog_update_model cleared them */
	if (m->call.retrained_now ||
		(m->def.loss != LOSS_SQUARED && (m->call.anchor_changed || m->call.rebuilt_now)))
	{
		cohorts_rebuild(m);
		return;
	}
	/* cohorts removed whole have left, from their statistics or not */
	foreach(lc, m->call.whole_cohorts)
		((CohortStats *) lfirst(lc))->erased = true;
	cohort_store_write(m, m->call.whole_cohorts);
	if (cc == NULL)
		return;
	keep_in_step(m, cc, removed, -1.0);
	keep_in_step(m, cc, added, 1.0);
	cohort_store_write(m, cc->cohorts);
}

/*
 * The ledger lines of the cohorts m->call erased (operation "cohort", the
 * rows and what they spent; a measured residual, which replaced spent,
 * is marked reanchored); returns the rows they took.
 */
int64
cohorts_write_ledger(UnlearnModel *m)
{
	int			reanchors = m->call.reanchors_now;
	int64		rows = 0;
	ListCell   *lc;

	foreach(lc, m->call.erased_cohorts)
	{
		ErasedCohort *ec = (ErasedCohort *) lfirst(lc);

		m->call.reanchors_now = ec->measured ? 1 : reanchors;
		catalog_ledger(m, "cohort", ec->rows, 0, ec->bound, false);
		rows += ec->rows;
	}
	m->call.reanchors_now = reanchors;
	return rows;
}

/* --- rebuilding by a pass ------------------------------------------------- */

/* rows of a cohort gathered for one cohort_add_rows while the statistics are rebuilt */
#define REBUILD_BLOCK 256

typedef struct RebuildEntry
{
	char		key[COHORT_MAX_KEY + 1];
	int64		rows;
	CohortStats *cs;			/* NULL: not kept */
	RowBatch   *block;			/* mapped rows waiting for the DSYRK */
} RebuildEntry;

static int
compare_rows_desc(const ListCell *a, const ListCell *b)
{
	const RebuildEntry *x = (const RebuildEntry *) lfirst(a);
	const RebuildEntry *y = (const RebuildEntry *) lfirst(b);

	if (x->rows != y->rows)
		return x->rows > y->rows ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void
flush_block(UnlearnModel *m, RebuildEntry *e)
{
	StepRows	rows;

	if (e->block->count == 0)
		return;
	step_rows_prepare(m, e->block, &rows);
	cohort_add_rows(m, e->cs, &rows, NULL, e->block->count, 1.0);
	pfree(rows.y);
	pfree(rows.cls);
	e->block->count = 0;
}

/*
 * Which cohorts m keeps: the rows of each cohort value among the rows the
 * model reflects (keys only, one pass), then the largest first while
 * their statistics fit unlearn.cohort_memory.  Returns the hash table of
 * RebuildEntry, kept ones with their (empty) statistics, and the base
 * type of the cohort column in *base.
 */
static HTAB *
choose_cohorts(UnlearnModel *m, List **kept, Oid *base)
{
	Size		bytes = cohort_doubles(m) * sizeof(double);
	double		room = (double) unlearn_cohort_memory * 1024.0 * 1024.0;
	HASHCTL		ctl;
	HTAB	   *table;
	StringInfoData cond;
	ExtensionContext ctx;
	List	   *all = NIL;
	ListCell   *lc;
	uint64		r;

	*base = getBaseType(get_atttype(m->def.source, get_attnum(m->def.source, m->def.cohort)));
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = COHORT_MAX_KEY + 1;
	ctl.entrysize = sizeof(RebuildEntry);
	ctl.hcxt = CurrentMemoryContext;
	table = hash_create("unlearn cohort rebuild", 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	initStringInfo(&cond);
	append_model_row_condition(m, &cond, 1, false);
	enter_table_owner_context(m->def.source, &ctx);
	if (execute_with_model_condition(m, psprintf("SELECT %s%s, pg_catalog.count(*) FROM %s WHERE %s GROUP BY 1",
												 quote_identifier(m->def.cohort), cohort_collation(*base),
												 relation_qualified_name(m->def.source), cond.data),
									 0) != SPI_OK_SELECT)
		elog(ERROR, "could not count the cohorts of model \"%s\"", m->def.name);
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull);
		char	   *key = isnull ? NULL : cohort_key(*base, d);
		RebuildEntry *e;

		if (key == NULL)
			continue;
		e = hash_search(table, key, HASH_ENTER, NULL);
		e->rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));
		e->cs = NULL;
		e->block = NULL;
		all = lappend(all, e);
	}
	leave_extension_context(&ctx);
	list_sort(all, compare_rows_desc);
	foreach(lc, all)
	{
		RebuildEntry *e = (RebuildEntry *) lfirst(lc);

		if (room < (double) bytes)
			break;
		room -= (double) bytes;
		e->cs = cohort_new(m, e->key);
		e->block = new_row_batch(m->def.p, REBUILD_BLOCK);
		*kept = lappend(*kept, e->cs);
	}
	return table;
}

/*
 * Replace all of m's cohort statistics by a pass over its table at its
 * anchor (choose_cohorts picks which).  O(n p^2 K), in blocks of
 * REBUILD_BLOCK rows per cohort; memory: the kept statistics and a block
 * per kept cohort.
 */
void
cohorts_rebuild(UnlearnModel *m)
{
	HTAB	   *table;
	HASH_SEQ_STATUS seq;
	RebuildEntry *e;
	List	   *kept = NIL;
	Portal		portal;
	ExtensionContext ctx;
	Oid			base;
	Oid			trailing[1];
	RowMap		map;

	if (m->def.cohort == NULL)
		return;
	cohort_store_clear(m->def.name);
	if (m->released.status != MODEL_READY)
		return;
	table = choose_cohorts(m, &kept, &base);
	if (kept == NIL)
		return;
	trailing[0] = get_atttype(m->def.source, get_attnum(m->def.source, m->def.cohort));
	model_row_map(m, &map);
	enter_table_owner_context(m->def.source, &ctx);
	portal = SPI_cursor_open_with_args(NULL, build_model_select(m, model_rows_of(m, relation_qualified_name(m->def.source)),
																quote_identifier(m->def.cohort)),
									   0, NULL, NULL, NULL, false, 0);
	for (;;)
	{
		uint64		j;

		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_processed == 0)
			break;
		check_feature_select_types(m, SPI_tuptable->tupdesc, true, trailing, 1);
		for (j = 0; j < SPI_processed; j++)
		{
			HeapTuple	tup = SPI_tuptable->vals[j];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			Datum		d;
			char	   *key;
			RowBatch   *b;
			double	   *x;

			CHECK_FOR_INTERRUPTS();
			d = SPI_getbinval(tup, desc, m->def.nfeatures + 2, &isnull);
			if (isnull || (key = cohort_key(base, d)) == NULL ||
				(e = hash_search(table, key, HASH_FIND, NULL)) == NULL || e->cs == NULL)
				continue;
			b = e->block;
			x = b->x + (Size) b->count * m->def.p;
			if (!decode_spi_row(m, tup, desc, x, &b->labels[b->count], &b->label_values[b->count]) ||
				!model_takes_label(m, b->labels[b->count], b->label_values[b->count]))
				continue;
			add_raw_row(m, e->cs, x, b->labels[b->count], 1.0);
			map_row(&map, x);
			if (++b->count == REBUILD_BLOCK)
				flush_block(m, e);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	leave_extension_context(&ctx);
	hash_seq_init(&seq, table);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (e->cs != NULL)
			flush_block(m, e);
	cohort_store_write(m, kept);
	hash_destroy(table);
}
