/*-------------------------------------------------------------------------
 *
 * trigger.c
 *	  The triggers that keep every model of a table in step with it, inside
 *	  the changing transaction, and the event triggers that keep models from
 *	  outliving their table or columns.
 *
 * unlearn._maintain() runs as five statement triggers on a trained table
 * and on each of its partitions (catalog_attach_triggers), inside the
 * extension's security context (privilege.c).  Invariants:
 *
 *	- Lock order.  The BEFORE statement trigger locks the catalog rows of
 *	  the models the statement may change, in model-name order, before the
 *	  statement locks any row of the table; an UPDATE that sets no model
 *	  column locks nothing.  Admin functions lock the table first
 *	  (unlearn.c).  So writers and admin functions never wait in a cycle.
 *	- Once per query.  A query fires one BEFORE statement trigger per part
 *	  (DELETE, INSERT, UPDATE: an upsert or a MERGE has several, as do
 *	  writable CTEs), all before any row changes, and then one AFTER
 *	  trigger per part, all after every row changed.  The AFTER triggers
 *	  collect their rows (read in binary from the transition tables,
 *	  rows.c) and the last one applies them all in one step, so a
 *	  retraining, re-anchoring or exact bound reads exactly the table the
 *	  model is brought to, and no row counts twice.  Queries nested in it
 *	  on the same table join it, and a subtransaction that aborts takes
 *	  its parts with it (see PendingChange).  A part still pending at
 *	  commit is an error, never a silent loss.
 *	- Erasure goes through.  A model whose stored definition fails its
 *	  checks is quarantined with a WARNING; one the statement leaves with
 *	  too few rows, or whose budget runs out under 'suspend', withholds its
 *	  weights (removal.c).
 *
 * Everything is ordinary transactional writes: ROLLBACK (or ROLLBACK TO
 * SAVEPOINT) leaves the catalog rows exactly as they were.  READ COMMITTED
 * writers wait on the model row lock and then read the committed model;
 * REPEATABLE READ and SERIALIZABLE writers get a serialization failure
 * (40001), re-raised with a retry hint.
 *
 * UPDATE is rectification: the multiset difference OLD minus NEW is
 * removed and NEW minus OLD added, so an UPDATE that does not change the
 * model's columns spends nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/xact.h"
#include "catalog/partition.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/value.h"
#include "utils/tuplestore.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "tcop/deparse_utility.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "catalog/namespace.h"
#include "tcop/utility.h"

PG_FUNCTION_INFO_V1(unlearn_maintain_trigger);
PG_FUNCTION_INFO_V1(unlearn_truncate_trigger);
PG_FUNCTION_INFO_V1(unlearn_on_sql_drop);
PG_FUNCTION_INFO_V1(unlearn_on_ddl_end);

/*
 * The pending change of a trained table: the parts (BEFORE and AFTER
 * statement triggers) of the query that writes it, kept until the last
 * unlearn AFTER trigger of the query on the table (or any of its
 * partitions) fires.  Queries nested in it (a user's trigger or function
 * writing the same table while it runs) join it: their rows are in the
 * table from then on, so they must be applied together with the outer
 * query's.  Each part remembers the subtransaction it fired in: a
 * subtransaction that aborts (an exception block around a nested write)
 * takes its parts with it, as it takes its rows out of the table, and one
 * that commits hands them to its parent.  At most one change per table is
 * pending at a time; a complete one is applied and forgotten.
 */
typedef struct PendingPart
{
	SubTransactionId subxact;	/* where it fired (its parent's, once committed) */
	bool		after;			/* an AFTER trigger; else a BEFORE trigger */
	int			operation;		/* 1 delete, 2 insert, 4 update */
	List	   *models;			/* of ModelRows (AFTER only) */
} PendingPart;

typedef struct PendingChange
{
	Oid			relid;			/* the trained table (a partition root) */
	List	   *parts;			/* of PendingPart */
	List	   *refs;			/* of ModelRef: the models its last BEFORE
								 * trigger locked, which its AFTER triggers
								 * maintain (no model of the table changes
								 * meanwhile: refuse_in_statement) */
	MemoryContext memory;		/* holds this struct, its parts and rows */
} PendingChange;


static List *pending_changes = NIL;	/* cells in TopTransactionContext */

/* the pending change of relid, or NULL */
static PendingChange *
find_pending_change(Oid relid)
{
	ListCell   *lc;

	foreach(lc, pending_changes)
		if (((PendingChange *) lfirst(lc))->relid == relid)
			return (PendingChange *) lfirst(lc);
	return NULL;
}

/* keep a copy of refs (of ModelRef) in pc, as its models */
static void
keep_refs(PendingChange *pc, List *refs)
{
	MemoryContext old = MemoryContextSwitchTo(pc->memory);

	pc->refs = model_refs_copy(refs);
	MemoryContextSwitchTo(old);
}

static PendingChange *
pending_change(Oid relid)
{
	PendingChange *pc = find_pending_change(relid);
	MemoryContext old;
	MemoryContext memory;

	if (pc != NULL)
		return pc;
	memory = AllocSetContextCreate(TopTransactionContext, "unlearn pending change",
								   ALLOCSET_DEFAULT_SIZES);
	pc = MemoryContextAllocZero(memory, sizeof(PendingChange));
	pc->relid = relid;
	pc->memory = memory;
	old = MemoryContextSwitchTo(TopTransactionContext);
	pending_changes = lappend(pending_changes, pc);
	MemoryContextSwitchTo(old);
	return pc;
}

/* a new part of pc, fired in the current subtransaction */
static PendingPart *
add_part(PendingChange *pc, bool after, int operation)
{
	MemoryContext old = MemoryContextSwitchTo(pc->memory);
	PendingPart *part = palloc0(sizeof(PendingPart));

	part->subxact = GetCurrentSubTransactionId();
	part->after = after;
	part->operation = operation;
	pc->parts = lappend(pc->parts, part);
	MemoryContextSwitchTo(old);
	return part;
}

/* the change is complete when every BEFORE part has its AFTER part */
static bool
change_complete(PendingChange *pc)
{
	ListCell   *lc;
	int			balance = 0;

	foreach(lc, pc->parts)
		balance += ((PendingPart *) lfirst(lc))->after ? 1 : -1;
	return balance >= 0;
}




/* *dst := *dst followed by a copy of src (rows of p doubles), in cxt */
static void
append_batch(int p, RowBatch **dst, const RowBatch *src, MemoryContext cxt)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	RowBatch   *out = new_row_batch(p, (*dst ? (*dst)->count : 0) + src->count);
	int			i;

	for (i = 0; *dst != NULL && i < (*dst)->count; i++)
		row_batch_keep(p, out, *dst, i);
	for (i = 0; i < src->count; i++)
	{
		row_batch_keep(p, out, src, i);
		out->labels[out->count - 1] = pstrdup(src->labels[i]);
		if (src->cohorts[i] != NULL)
			out->cohorts[out->count - 1] = pstrdup(src->cohorts[i]);
	}
	*dst = out;
	MemoryContextSwitchTo(old);
}

/*
 * The rows of a transition table, raw (features unmapped, first d entries
 * of each p-row), read in binary from the tuplestore: no SQL, no casts.
 * A row for which a feature expression fails is outside the model,
 * counted, and suspends it (suspend_for_failed_expression).  Rows whose
 * cohort key is in skip (cohorts removed whole) are not read.
 */
static RowBatch *
read_transition(UnlearnModel *m, Tuplestorestate *ts, Relation rel, Oid caller, HTAB *skip)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsMinimalTuple);
	SlotRowReader *reader = slot_row_reader_begin(m, rel);
	RowBatch   *batch;
	int			capacity = 64;

	batch = new_row_batch(m->def.p, capacity);
	tuplestore_select_read_pointer(ts, 0);
	tuplestore_rescan(ts);
	while (tuplestore_gettupleslot(ts, true, false, slot))
	{
		bool		failed;

		char	   *cohort;

		CHECK_FOR_INTERRUPTS();
		cohort = slot_row_cohort(reader, slot);
		if (skip != NULL && cohort != NULL && hash_search(skip, cohort, HASH_FIND, NULL) != NULL)
			continue;			/* a cohort removed whole: not read */
		row_batch_reserve(batch, m->def.p, &capacity);
		if (slot_row_decode_guarded(reader, slot, batch->x + (Size) batch->count * m->def.p,
									&batch->labels[batch->count],
									&batch->label_values[batch->count], &failed))
			batch->cohorts[batch->count++] = cohort;
		else if (!slot_row_filtered(reader))
			batch->skipped++;
		if (failed)
			suspend_for_failed_expression(m, caller);
	}
	slot_row_reader_end(reader);
	ExecDropSingleTupleTableSlot(slot);
	return batch;
}

/* the multiset order of raw rows: features (first d of p), label, cohort */
static int
compare_rows(const UnlearnModel *m, const RowBatch *a, int i, const RowBatch *b, int j)
{
	const double *x = a->x + (Size) i * m->def.p;
	const double *y = b->x + (Size) j * m->def.p;
	const char *ca = a->cohorts[i];
	const char *cb = b->cohorts[j];
	int			k;

	for (k = 0; k < m->def.dims; k++)
		if (x[k] != y[k])
			return x[k] < y[k] ? -1 : 1;
	k = strcmp(a->labels[i], b->labels[j]);
	if (k != 0 || (ca == NULL && cb == NULL))
		return k;
	/* a row that moves to another cohort leaves one and enters the other */
	if (ca == NULL || cb == NULL)
		return ca == NULL ? -1 : 1;
	return strcmp(ca, cb);
}

static const UnlearnModel *sorting_model;
static const RowBatch *sorting_batch;

static int
compare_row_indexes(const void *a, const void *b)
{
	return compare_rows(sorting_model, sorting_batch, *(const int *) a,
						sorting_batch, *(const int *) b);
}

static int *
sorted_rows(UnlearnModel *m, const RowBatch *batch)
{
	int		   *order = palloc(sizeof(int) * Max(batch->count, 1));
	int			i;

	for (i = 0; i < batch->count; i++)
		order[i] = i;
	sorting_model = m;
	sorting_batch = batch;
	qsort(order, batch->count, sizeof(int), compare_row_indexes);
	return order;
}

/*
 * UPDATE is rectification: remove OLD minus NEW and add NEW minus OLD, as
 * multisets of (features, label, cohort), so that an UPDATE of other columns
 * spends nothing.  O(k log k) for k rows.
 */
static void
multiset_difference(UnlearnModel *m, RowBatch **old_rows, RowBatch **new_rows)
{
	RowBatch   *o = *old_rows,
			   *n = *new_rows;
	RowBatch   *ro = new_row_batch(m->def.p, o->count),
			   *rn = new_row_batch(m->def.p, n->count);
	int		   *oi,
			   *ni;
	int			a = 0,
				b = 0;

	oi = sorted_rows(m, o);
	ni = sorted_rows(m, n);
	while (a < o->count || b < n->count)
	{
		int			c;

		if (a == o->count)
			c = 1;
		else if (b == n->count)
			c = -1;
		else
			c = compare_rows(m, o, oi[a], n, ni[b]);
		if (c == 0)
		{
			a++;
			b++;
		}
		else if (c < 0)
			row_batch_keep(m->def.p, ro, o, oi[a++]);
		else
			row_batch_keep(m->def.p, rn, n, ni[b++]);
	}
	/* rows left out for a null are counted, not compared */
	ro->skipped = o->skipped;
	rn->skipped = n->skipped;
	*old_rows = ro;
	*new_rows = rn;
}



/*
 * Apply the queued rows of a deferred model (deferred.c) as one
 * statement's: rows that left and came back cancel, the rest go through
 * maintain_model.
 */
void
apply_queued_rows(UnlearnModel *m, RowBatch *removed, RowBatch *added, int64 skipped_delta,
				  const char *retrain_reason, Oid caller)
{
	ModelRows	rows;

	suspend_if_owner_may_not_read(m, caller);
	/* nothing cancels when one side is empty (a queue of DELETEs alone) */
	if (removed->count > 0 && added->count > 0)
		multiset_difference(m, &removed, &added);
	memset(&rows, 0, sizeof(rows));
	rows.name = m->def.name;
	rows.p = m->def.p;
	rows.removed = removed;
	rows.added = added;
	rows.skipped_delta = skipped_delta;
	rows.retrain_reason = retrain_reason;
	maintain_model(&rows, "apply", caller);
}

/* the table whose models a trigger maintains: itself, or its partition root */
Oid
trained_relation(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);

	if (rel->rd_rel->relispartition)
		relid = llast_oid(get_partition_ancestors(relid));
	return relid;
}

/*
 * BEFORE ... FOR EACH STATEMENT: lock every model of the table (those of
 * refs: the others are locked already), in model-name order, before the
 * statement locks any row of the table, and hold the locks to the end of
 * the transaction.  Every INSERT, UPDATE and DELETE does so, an UPDATE of
 * columns no model reads included: a transaction that holds a row lock of
 * the table then always holds its
 * models' locks as well, so no writer ever waits for a model while another
 * waits for its rows, across the statements of a transaction too (the
 * order relation-level locks before row locks, as PostgreSQL's own).
 * Admin functions (which lock the table first) never wait for a writer
 * that waits for them.
 */
static void
before_statement(TriggerData *td, List *refs, PendingChange *pc)
{
	ListCell   *lc;

	add_part(pc, false, 0);
	foreach(lc, refs)
	{
		ModelRef   *ref = (ModelRef *) lfirst(lc);
		MemoryContext cxt = CurrentMemoryContext;

		PG_TRY();
		{
			catalog_lock_model(ref->name);
		}
		PG_CATCH();
		{
			rethrow_lock_failure(ref->name, cxt);
		}
		PG_END_TRY();
	}
}

/* find (or start) the rows of model `name` in a list of ModelRows */
static ModelRows *
model_rows(List **models, const char *name, int p, MemoryContext cxt)
{
	ListCell   *lc;
	ModelRows  *mr;
	MemoryContext old;

	foreach(lc, *models)
	{
		mr = (ModelRows *) lfirst(lc);
		if (strcmp(mr->name, name) == 0)
			return mr;
	}
	old = MemoryContextSwitchTo(cxt);
	mr = palloc0(sizeof(ModelRows));
	mr->name = pstrdup(name);
	mr->p = p;
	*models = lappend(*models, mr);
	MemoryContextSwitchTo(old);
	return mr;
}

static int
compare_model_rows(const ListCell *a, const ListCell *b)
{
	return strcmp(((ModelRows *) lfirst(a))->name, ((ModelRows *) lfirst(b))->name);
}

/*
 * Apply a complete change: each model gets the rows of all AFTER parts at
 * once, models in name order (the lock order).
 */
static void
apply_change(PendingChange *pc, const char *operation, Oid caller)
{
	List	   *models = NIL;
	ListCell   *lc,
			   *lc2;
	int			operations = 0;

	foreach(lc, pc->parts)
	{
		PendingPart *part = (PendingPart *) lfirst(lc);

		operations |= part->operation;
		foreach(lc2, part->models)
		{
			ModelRows  *from = (ModelRows *) lfirst(lc2);
			ModelRows  *to = model_rows(&models, from->name, from->p, pc->memory);

			/*
			 * parts decoded with definitions of different widths: the
			 * model changed between them, and is retrained on the table
			 * (maintain_model drops rows that are not of its width)
			 */
			if (from->p != to->p)
				to->p = -1;

			to->skipped_delta += from->skipped_delta;
			to->other_entered |= from->other_entered;
			if (from->loaded != NULL)
				to->loaded = from->loaded;
			if (from->whole != NIL)
			{
				MemoryContext old = MemoryContextSwitchTo(pc->memory);

				to->whole = list_concat(to->whole, from->whole);
				MemoryContextSwitchTo(old);
			}
			if (to->p < 0)
				continue;
			/* one part (the usual statement): its rows as they are */
			if (from->removed != NULL && to->removed == NULL)
				to->removed = from->removed;
			else if (from->removed != NULL)
				append_batch(from->p, &to->removed, from->removed, pc->memory);
			if (from->added != NULL && to->added == NULL)
				to->added = from->added;
			else if (from->added != NULL)
				append_batch(from->p, &to->added, from->added, pc->memory);
		}
	}
	list_sort(models, compare_model_rows);
	foreach(lc, models)
		maintain_model((ModelRows *) lfirst(lc),
					   operations == 1 ? "delete" : operations == 2 ? "insert" :
					   operations == 4 ? operation : "merge", caller);
}

/*
 * AFTER ... FOR EACH STATEMENT: collect this trigger's rows for every
 * model of the table.  A query may fire up to three of these triggers on
 * one table (INSERT ... ON CONFLICT DO UPDATE, MERGE, writable CTEs), and
 * every one of them fires after all of the query's rows changed.  So the
 * rows are applied only when the last of them fires, all at once: a
 * retraining, a re-anchoring or an exact bound then reads exactly the
 * table the model is brought to, and no row is applied twice.  The
 * query's BEFORE statement triggers, which all fire before any row
 * changes, tell how many parts there are.
 */
static void
after_statement(TriggerData *td, List *refs, PendingChange *pc, bool locked_before,
				const char *operation, Oid caller)
{
	PendingPart *part;
	ListCell   *lc;
	int64		i;
	bool		applies_here;

	part = add_part(pc, true, TRIGGER_FIRED_BY_DELETE(td->tg_event) ? 1 :
					TRIGGER_FIRED_BY_INSERT(td->tg_event) ? 2 : 4);
	applies_here = change_complete(pc);
	foreach(lc, refs)
	{
		ModelRef   *ref = (ModelRef *) lfirst(lc);
		UnlearnModel *m = applies_here && !locked_before ? lock_model_for_change(ref->name) :
			load_model_for_change(ref->name, false);
		RowBatch   *removed = NULL;
		RowBatch   *added = NULL;
		ModelRows  *mr;
		ModelStatus loaded_status;

		/* dropped, quarantined, or its name now on another table */
		if (m == NULL || m->def.source != pc->relid)
			continue;
		loaded_status = m->released.status;
		suspend_if_owner_may_not_read(m, caller);
		mr = model_rows(&part->models, m->def.name, m->def.p, pc->memory);
		if (td->tg_oldtable != NULL)
		{
			HTAB	   *whole = NULL;

			/* a DELETE's whole cohorts are counted, not read (cohorts.c) */
			if (td->tg_newtable == NULL)
			{
				MemoryContext old = MemoryContextSwitchTo(pc->memory);
				List	   *listed = NIL;

				whole = cohorts_whole_in_transition(m, td->tg_oldtable, td->tg_relation, &listed);
				/* SPI left the procedure's context current */
				MemoryContextSwitchTo(pc->memory);
				mr->whole = list_concat(mr->whole, listed);
				MemoryContextSwitchTo(old);
			}
			removed = read_transition(m, td->tg_oldtable, td->tg_relation, caller, whole);
		}
		if (td->tg_newtable != NULL)
			added = read_transition(m, td->tg_newtable, td->tg_relation, caller, NULL);
		for (i = 0; added != NULL && m->def.ntaken > 0 && !mr->other_entered && i < added->count; i++)
			mr->other_entered = taken_other_set(m, added->x + (Size) i * m->def.p);
		if (removed != NULL && added != NULL)
			multiset_difference(m, &removed, &added);
		mr->skipped_delta += (added ? added->skipped : 0) - (removed ? removed->skipped : 0);
		if (removed != NULL && removed->count > 0)
			append_batch(m->def.p, &mr->removed, removed, pc->memory);
		if (added != NULL && added->count > 0)
			append_batch(m->def.p, &mr->added, added, pc->memory);
		/* unless decoding suspended it (a catalog write) */
		if (applies_here && m->released.status == loaded_status)
			mr->loaded = m;
	}
	if (!applies_here)
		return;					/* another part of this query fires later */
	/* off the list first: an error while applying leaves nothing pending */
	pending_changes = list_delete_ptr(pending_changes, pc);
	apply_change(pc, operation, caller);
	/* a long transaction keeps no copy of the rows it applied */
	MemoryContextDelete(pc->memory);
}

/*
 * Under REPEATABLE READ or SERIALIZABLE the models are listed in the
 * transaction's snapshot: a model trained on the table since (committed,
 * its triggers seen) would miss the statement's rows.  Such a transaction
 * cannot be serialized after that training: 40001, and it retries.
 */
static void
refuse_models_after_snapshot(Oid root, List *refs)
{
	List	   *volatile latest = NIL;
	ListCell   *lc,
			   *lc2;

	catalog_read_latest(true);
	PG_TRY();
	{
		latest = catalog_models_of_relation(root);
	}
	PG_FINALLY();
	{
		catalog_read_latest(false);
	}
	PG_END_TRY();
	foreach(lc, latest)
	{
		ModelRef   *now = (ModelRef *) lfirst(lc);
		bool		listed = now->deferred;

		foreach(lc2, refs)
			listed |= strcmp(((ModelRef *) lfirst(lc2))->name, now->name) == 0;
		if (!listed)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access to table \"%s\" due to a model trained on it concurrently",
							get_rel_name(root)),
					 errdetail("Model \"%s\" was trained after this transaction's snapshot.", now->name),
					 errhint("Retry the transaction.")));
	}
}

/* the models whose changes the statement triggers apply: not the deferred ones */
static List *
immediate_models(List *refs)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, refs)
		if (!((ModelRef *) lfirst(lc))->deferred)
			out = lappend(out, lfirst(lc));
	return out;
}

/* the trigger must be one the extension attached, for its own event */
static void
check_trigger_identity(TriggerData *td)
{
	const char *name = td->tg_trigger->tgname;
	bool		ours;

	if (TRIGGER_FIRED_BEFORE(td->tg_event))
		ours = strcmp(name, "unlearn_before_write") == 0;
	else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		ours = strcmp(name, "unlearn_after_delete") == 0;
	else if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		ours = strcmp(name, "unlearn_after_insert") == 0;
	else
		ours = strcmp(name, "unlearn_after_update") == 0;
	if (!ours || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._maintain() fired by trigger \"%s\", which unlearn did not create",
						name),
				 errhint("Only unlearn_train() attaches this function to a table.")));
}

Datum
unlearn_maintain_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	const char *operation;
	List	   *refs;
	ExtensionContext ctx;
	PendingChange *pc;
	Oid			root;
	bool		locked;
	bool		locked_before;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._maintain() must be called as a trigger")));
	check_trigger_identity(td);
	if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
		operation = "delete";
	else if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
		operation = "insert";
	else if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
		operation = "update";
	else
		elog(ERROR, "unlearn._maintain() fired by an unexpected event");

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	/*
	 * One pending change per query and trained root: a query may write the
	 * root and some of its partitions directly (a writable CTE), and all of
	 * its parts on the tree must be applied together.
	 */
	root = trained_relation(td->tg_relation);
	/* an AFTER trigger's models, each locked by its query's BEFORE trigger */
	pc = TRIGGER_FIRED_BEFORE(td->tg_event) ? NULL : find_pending_change(root);
	locked_before = pc != NULL;
	if (pc == NULL && !cached_may_have_immediate_models(root))
	{
		leave_extension_context(&ctx);
		SPI_finish();
		return PointerGetDatum(NULL);
	}
	/*
	 * READ COMMITTED: the BEFORE trigger lists and locks the models in one
	 * query, as no lock there can fail to serialize.  Otherwise the models
	 * are locked one by one, so that such a failure names its model.
	 */
	locked = TRIGGER_FIRED_BEFORE(td->tg_event) && !IsolationUsesXactSnapshot();
	if (pc != NULL)
		refs = pc->refs;
	else if (locked)
		refs = catalog_lock_immediate_models(root);
	else
	{
		refs = immediate_models(catalog_models_of_relation(root));
		if (IsolationUsesXactSnapshot())
			refuse_models_after_snapshot(root, refs);
	}
	if (refs != NIL)
	{
		pc = pending_change(root);
		if (TRIGGER_FIRED_BEFORE(td->tg_event))
		{
			keep_refs(pc, refs);
			before_statement(td, locked ? NIL : refs, pc);
		}
		else
			after_statement(td, refs, pc, locked_before, operation, ctx.caller);
	}
	leave_extension_context(&ctx);
	SPI_finish();
	return PointerGetDatum(NULL);
}

/* does pc hold rows that no model has seen? */
static bool
change_has_rows(PendingChange *pc)
{
	ListCell   *lc;

	foreach(lc, pc->parts)
		if (((PendingPart *) lfirst(lc))->models != NIL)
			return true;
	return false;
}

/*
 * Every query's parts are applied by its last unlearn trigger.  A change
 * still pending at commit would be a row the model never saw: refuse to
 * commit rather than lose it silently.
 */
static void
pending_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			foreach(lc, pending_changes)
			{
				PendingChange *pc = (PendingChange *) lfirst(lc);

				if (change_has_rows(pc))
					ereport(ERROR,
							(errcode(ERRCODE_INTERNAL_ERROR),
							 errmsg("unlearn: a change to table \"%s\" was not applied to its models",
									get_rel_name(pc->relid)),
							 errhint("This is a bug; the transaction is rolled back so that no model misses a row.")));
			}
			break;
		default:
			pending_changes = NIL;	/* its memory went with the transaction */
			break;
	}
}

/*
 * A subtransaction that aborts takes the parts that fired in it (their
 * rows left the table with it); one that commits hands them to its parent.
 */
static void
pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc,
			   *lc2;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, pending_changes)
	{
		PendingChange *pc = (PendingChange *) lfirst(lc);

		foreach(lc2, pc->parts)
		{
			PendingPart *part = (PendingPart *) lfirst(lc2);

			if (part->subxact != mySubid)
				continue;
			if (event == SUBXACT_EVENT_COMMIT_SUB)
				part->subxact = parentSubid;
			else
				pc->parts = foreach_delete_current(pc->parts, lc2);
		}
		if (pc->parts == NIL)
		{
			pending_changes = foreach_delete_current(pending_changes, lc);
			MemoryContextDelete(pc->memory);
		}
	}
}

/*
 * The utility hook.  A foreign table takes no TRUNCATE trigger, so
 * TRUNCATE of a foreign partition of a trained table (which carries the
 * clone of its deferred row trigger) is refused here, as the TRUNCATE
 * guard refuses the others.  And a command that takes rows out of a
 * trained tree (TRUNCATE, DETACH PARTITION, DROP TABLE of a partition)
 * has them counted before it runs and forgotten after (partition_erasure.c).
 */
static ProcessUtility_hook_type prev_process_utility = NULL;

static void
guard_foreign_truncate(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					   ProcessUtilityContext context, ParamListInfo params,
					   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	volatile bool prepared = false;
	List	   *volatile outer;
	volatile uint64 copy = 0;

	citus_guard_utility(pstmt->utilityStmt);
	if (IsA(pstmt->utilityStmt, TruncateStmt))
	{
		ListCell   *lc;

		foreach(lc, ((TruncateStmt *) pstmt->utilityStmt)->relations)
		{
			Oid			relid = RangeVarGetRelid((RangeVar *) lfirst(lc), NoLock, true);

			if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_FOREIGN_TABLE &&
				OidIsValid(get_trigger_oid(relid, "unlearn_after_row", true)))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot truncate table \"%s\" because unlearn models are trained on it",
								get_rel_name(relid)),
						 errdetail("TRUNCATE does not fire row deletion triggers, so the models could not forget the rows."),
						 errhint("Use DELETE to erase rows with certified removal, or drop the models with unlearn_drop() first.")));
		}
	}
	/* COPY FROM writes its table without the executor's hooks */
	if (IsA(pstmt->utilityStmt, CopyStmt) && ((CopyStmt *) pstmt->utilityStmt)->is_from)
		copy = writing_copy_begin();
	outer = partition_erasure_save();
	PG_TRY();
	{
		prepared = partition_erasure_prepare(pstmt->utilityStmt);
		if (prev_process_utility)
			prev_process_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
		if (prepared)
			partition_erasure_finish();
	}
	PG_FINALLY();
	{
		partition_erasure_restore(outer);
		if (copy != 0)
			writing_copy_end(copy);
	}
	PG_END_TRY();
}

void
trigger_init(void)
{
	RegisterXactCallback(pending_xact_callback, NULL);
	RegisterSubXactCallback(pending_subxact_callback, NULL);
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = guard_foreign_truncate;
	partition_erasure_init();
}

Datum
unlearn_truncate_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("unlearn._forbid_truncate() must be called as a trigger")));
	{
		ExtensionContext ctx;
		bool		allowed;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		enter_extension_context(&ctx);
		allowed = partition_erasure_allows_truncate(RelationGetRelid(td->tg_relation));
		leave_extension_context(&ctx);
		SPI_finish();
		if (allowed)
			return PointerGetDatum(NULL);
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot truncate table \"%s\" because unlearn models are trained on it",
					RelationGetRelationName(td->tg_relation)),
			 errdetail("TRUNCATE does not fire row deletion triggers, so the models could not forget the rows."),
			 errhint("Use DELETE to erase rows with certified removal, or drop the models with unlearn_drop() first.")));
	return PointerGetDatum(NULL);
}

/*
 * Every table of a trained partition tree must keep the triggers its
 * models need (catalog_attach_triggers), ENABLE ALWAYS: for immediate
 * models the five statement triggers, for deferred ones the row trigger
 * (the root's and its clones) and the TRUNCATE guard (but on foreign
 * tables).  `where` restricts the models checked.  After ALTER TABLE
 * (ddl_end) only the triggers present must be enabled: a restore creates
 * them one by one, after the catalog's data and the table's constraints.
 * Dropping one (sql_drop) is refused outright.
 */
static void
check_triggers_intact(const char *where, bool all_present)
{
	uint64		i;
	const char *removal = catalog_has_deferred_removal() ? "removal" : "'immediate'";

	if (SPI_execute(psprintf("SELECT t.relid::pg_catalog.oid, m.model FROM "
							 "(SELECT source, pg_catalog.min(model) AS model, "
							 " pg_catalog.bool_or(%s = 'immediate') AS immediate, "
							 " pg_catalog.bool_or(%s IN ('deferred', 'async')) AS deferred, "
							 " pg_catalog.count(*) AS models "
							 " FROM unlearn.models %s GROUP BY source) m, "
							 "LATERAL (SELECT m.source AS relid UNION "
							 " SELECT p.relid FROM pg_catalog.pg_partition_tree(m.source) p) t, "
							 "LATERAL (SELECT pg_catalog.count(*) AS present, "
							 " pg_catalog.count(*) FILTER (WHERE g.tgenabled = "
							 " CASE WHEN g.tgname LIKE 'unlearn\\_shard\\_%%' THEN 'O' ELSE 'A' END) AS enabled "
							 " FROM pg_catalog.pg_trigger g "
							 " JOIN pg_catalog.pg_proc f ON f.oid = g.tgfoid "
							 " AND f.pronamespace = 'unlearn'::pg_catalog.regnamespace "
							 " WHERE g.tgrelid = t.relid AND (g.tgname IN (" UNLEARN_TRIGGER_NAMES ") "
							 " OR g.tgname LIKE 'unlearn\\_shard\\_%%')) g, "
							 "LATERAL (SELECT c.relkind = 'f' AS is_foreign, %s AS distributed "
							 " FROM pg_catalog.pg_class c WHERE c.oid = t.relid) c "
							 "WHERE g.enabled <> %s",
							 removal, removal, where,
							 OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)) ?
							 "c.oid IN (SELECT logicalrelid FROM pg_catalog.pg_dist_partition WHERE partmethod = 'h')" :
							 "false",
							 all_present ?
							 "CASE WHEN c.distributed THEN m.models ELSE "
							 "CASE WHEN m.immediate THEN 4 ELSE 0 END "
							 "+ CASE WHEN c.is_foreign THEN 0 ELSE 1 END "
							 "+ CASE WHEN m.deferred THEN 1 ELSE 0 END END" : "g.present"),
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not check the unlearn triggers");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		char	   *model = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("the unlearn triggers of table \"%s\" must stay enabled", get_rel_name(relid)),
				 errdetail("Model \"%s\" relies on them to forget deleted rows.", model),
				 errhint("Drop the table's models with unlearn_drop() first.")));
	}
}

static bool
same_oid_arrays(Datum a, Datum b)
{
	ArrayType  *x = DatumGetArrayTypeP(a);
	ArrayType  *y = DatumGetArrayTypeP(b);
	int			nx = ArrayGetNItems(ARR_NDIM(x), ARR_DIMS(x));
	int			ny = ArrayGetNItems(ARR_NDIM(y), ARR_DIMS(y));

	if (ARR_ELEMTYPE(x) != OIDOID || ARR_HASNULL(x) || nx != ny)
		return false;
	return nx == 0 || memcmp(ARR_DATA_PTR(x), ARR_DATA_PTR(y), sizeof(Oid) * nx) == 0;
}

/* the oids of stored that current lacks; NIL if current has one stored lacks */
static List *
lost_partitions(Datum stored, Datum current)
{
	ArrayType  *x = DatumGetArrayTypeP(stored);
	ArrayType  *y = DatumGetArrayTypeP(current);
	int			nx = ArrayGetNItems(ARR_NDIM(x), ARR_DIMS(x));
	int			ny = ArrayGetNItems(ARR_NDIM(y), ARR_DIMS(y));
	Oid		   *a = (Oid *) ARR_DATA_PTR(x);
	Oid		   *b = (Oid *) ARR_DATA_PTR(y);
	List	   *lost = NIL;
	int			i,
				j;

	if (ARR_HASNULL(x) || ARR_HASNULL(y) || ARR_ELEMTYPE(x) != OIDOID || ARR_ELEMTYPE(y) != OIDOID)
		return NIL;
	for (j = 0; j < ny; j++)
	{
		for (i = 0; i < nx && a[i] != b[j]; i++)
			;
		if (i == nx)
			return NIL;			/* gained one: not only a loss */
	}
	for (i = 0; i < nx; i++)
	{
		for (j = 0; j < ny && b[j] != a[i]; j++)
			;
		if (j == ny)
			lost = lappend_oid(lost, a[i]);
	}
	return lost;
}

/*
 * A trained partitioned table whose set of partitions changed (CREATE
 * TABLE ... PARTITION OF, ATTACH, DETACH, DROP of a partition) gains its
 * rows or loses them without a DML statement: its new partitions get the
 * triggers, and its models retrain on its rows (or rest, with too few),
 * so that each model reflects exactly the table again; a model whose
 * owner may no longer read the table is suspended and counts the rows.
 */
static void
sync_partition_sets(Oid caller)
{
	List	   *sources = NIL;
	List	   *losses = NIL;	/* per source: the partitions it lost */
	ListCell   *lc;
	uint64		i;

	/* as a set: a restore maps the stored names to new oids, in another order */
	if (SPI_execute("SELECT DISTINCT m.source::pg_catalog.oid, "
					"ARRAY(SELECT p::pg_catalog.oid FROM pg_catalog.unnest(m.partitions) p ORDER BY 1) "
					"FROM unlearn.models m "
					"JOIN pg_catalog.pg_class c ON c.oid = m.source WHERE c.relkind = 'p'",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the partitioned sources");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		Datum		stored = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		int			n;
		Datum		current = partition_set(relid, &n);

		if (isnull || !same_oid_arrays(stored, current))
		{
			sources = lappend_oid(sources, relid);
			losses = lappend(losses, isnull ? NIL : lost_partitions(stored, current));
		}
	}
	foreach(lc, sources)
	{
		Oid			relid = lfirst_oid(lc);
		List	   *refs;
		ListCell   *lc2;
		List	   *lost = lfirst(list_nth_cell(losses, foreach_current_index(lc)));

		refuse_in_statement(relid, "change the partitions of");
		catalog_attach_triggers(relid);
		refs = catalog_models_of_relation(relid);
		foreach(lc2, refs)
		{
			UnlearnModel *m = catalog_load_model(((ModelRef *) lfirst(lc2))->name, true, true, true);

			if (m == NULL)
				continue;
			/* whole cohorts, or no row of the model, left (partition_erasure.c) */
			if (model_owner_may_read(m) && partition_erasure_apply(m, lost))
				continue;
			retrain_after_rows_left(m, caller, "repartition", "The partitions of its table changed.");
		}
		catalog_set_partitions(relid);
	}
}


/*
 * Refuse a change to the columns named in pairs (relid, column name) that
 * some model of relid's trained table reads (refuse_column_change).
 */
static void
refuse_changed_columns(List *relids, List *columns, const char *change)
{
	ListCell   *lr,
			   *lcol;

	forboth(lr, relids, lcol, columns)
	{
		Oid			relid = lfirst_oid(lr);
		ListCell   *lm;

		if (get_rel_relispartition(relid))
			relid = llast_oid(get_partition_ancestors(relid));
		foreach(lm, catalog_models_of_relation(relid))
		{
			UnlearnModel *m = catalog_load_model(((ModelRef *) lfirst(lm))->name, false, false, false);

			refuse_column_change(m, (const char *) lfirst(lcol), change);
		}
	}
}

/* ALTER TABLE ... ALTER COLUMN ... TYPE on a column a model reads */
static void
refuse_retyped_columns(void)
{
	List	   *relids = NIL;
	List	   *columns = NIL;
	uint64		i;

	if (SPI_execute("SELECT c.command FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"WHERE c.command_tag = 'ALTER TABLE' "
					"AND c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		CollectedCommand *cmd = (CollectedCommand *)
			DatumGetPointer(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		ListCell   *lc;

		if (isnull || cmd->type != SCT_AlterTable)
			continue;
		foreach(lc, cmd->d.alterTable.subcmds)
		{
			AlterTableCmd *sub = (AlterTableCmd *) ((CollectedATSubcmd *) lfirst(lc))->parsetree;

			if (IsA(sub, AlterTableCmd) && sub->subtype == AT_AlterColumnType && sub->name != NULL)
			{
				relids = lappend_oid(relids, cmd->d.alterTable.objectId);
				columns = lappend(columns, pstrdup(sub->name));
			}
		}
	}
	refuse_changed_columns(relids, columns, "retype");
}

/*
 * CREATE TRIGGER or ALTER TRIGGER ... RENAME on a table of a trained tree
 * that would leave one of the extension's trigger functions under another
 * name, or another function under one of the extension's trigger names:
 * the table's writes would then miss its models, or fail.  Refused at the
 * DDL, so that the table keeps working and nothing else is affected.
 */
static void
refuse_trigger_impostors(void)
{
	if (SPI_execute("SELECT g.tgname, g.tgrelid::pg_catalog.regclass::pg_catalog.text "
					"FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"JOIN pg_catalog.pg_trigger g ON g.oid = c.objid "
					"JOIN pg_catalog.pg_proc f ON f.oid = g.tgfoid "
					"WHERE c.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass "
					"AND (f.pronamespace = 'unlearn'::pg_catalog.regnamespace) <> "
					"(g.tgname IN (" UNLEARN_TRIGGER_NAMES ") OR g.tgname LIKE 'unlearn\\_shard\\_%') "
					"AND EXISTS (SELECT 1 FROM unlearn.models m WHERE g.tgrelid IN "
					"(SELECT m.source UNION SELECT p.relid FROM pg_catalog.pg_partition_tree(m.source) p)) "
					"LIMIT 1",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("trigger \"%s\" of table %s cannot take or leave a name of the unlearn triggers",
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errdetail("The table's models rely on their triggers, under their names, to forget deleted rows."),
				 errhint("Drop the table's models with unlearn_drop() first, or give your trigger another name.")));
}

/* an inheritance child of a trained table would bypass its triggers */
static void
refuse_inheritance_children(void)
{
	if (SPI_execute("SELECT c.objid::pg_catalog.regclass::pg_catalog.text, m.model "
					"FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"JOIN pg_catalog.pg_inherits i ON i.inhrelid = c.objid "
					"JOIN pg_catalog.pg_class k ON k.oid = c.objid AND NOT k.relispartition "
					"JOIN unlearn.models m ON m.source = i.inhparent "
					"WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass LIMIT 1",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" cannot inherit from a table with unlearn models",
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1)),
				 errdetail("Writes to an inheritance child do not reach the triggers of model \"%s\".",
						   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errhint("Use declarative partitioning: a partition's writes reach its root's models.")));
}

Datum
unlearn_on_sql_drop(PG_FUNCTION_ARGS)
{
	ExtensionContext ctx;
	uint64		i;
	List	   *gone_tables;
	ListCell   *lc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "unlearn._on_sql_drop() must be called as an event trigger");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	catalog_queries_without_jit();

	citus_guard_dropped_shard_triggers(ctx.caller);
	/* dropped tables take their models with them, whoever owns the models (notices in name order) */
	if (SPI_execute(psprintf("WITH gone AS (DELETE FROM unlearn.models m "
							 "USING pg_catalog.pg_event_trigger_dropped_objects() d "
							 "WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid = 0 "
							 "AND m.source = d.objid RETURNING m.model, "
							 "pg_catalog.quote_ident(d.schema_name) || '.' || "
							 "pg_catalog.quote_ident(d.object_name) AS source)%s "
							 "SELECT model, source FROM gone ORDER BY model COLLATE \"C\"",
							 catalog_has_deferred_removal() ?
							 ", queue AS (DELETE FROM unlearn.pending q USING gone WHERE q.model = gone.model)" : ""),
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not drop the models of dropped tables");
	gone_tables = NIL;
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *model = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

		state_store_forget(model);
		ereport(NOTICE, (errmsg("dropped model \"%s\" with its table", model)));
		gone_tables = list_append_unique(gone_tables,
										 makeString(SPI_getvalue(SPI_tuptable->vals[i],
																 SPI_tuptable->tupdesc, 2)));
	}
	/* a dropped distributed table's queue goes with its models */
	foreach(lc, gone_tables)
		citus_drop_queue(strVal(lfirst(lc)));

	/* a dropped column a model reads (even if one of its name is added back) */
	if (SPI_execute("SELECT d.objid, d.address_names[pg_catalog.array_length(d.address_names, 1)] "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() d "
					"WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid > 0 "
					"AND d.object_type = 'table column'",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	{
		List	   *relids = NIL;
		List	   *columns = NIL;

		for (i = 0; i < SPI_processed; i++)
		{
			bool		isnull;

			relids = lappend_oid(relids, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																		SPI_tuptable->tupdesc, 1, &isnull)));
			columns = lappend(columns, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
		}
		refuse_changed_columns(relids, columns, "drop");
	}
	if (!unlearn_changing_triggers)
	{
		sync_partition_sets(ctx.caller);
		/* only the trees that lost a trigger: DDL elsewhere is none of ours */
		check_triggers_intact("WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger_dropped_objects() d "
							  "WHERE d.object_type = 'trigger' "
							  "AND (d.address_names[3] IN (" UNLEARN_TRIGGER_NAMES ") "
							  "OR d.address_names[3] LIKE 'unlearn\\_shard\\_%') "
							  "AND pg_catalog.to_regclass(pg_catalog.quote_ident(d.address_names[1]) "
							  "|| '.' || pg_catalog.quote_ident(d.address_names[2])) IN "
							  "(SELECT source UNION SELECT p.relid FROM pg_catalog.pg_partition_tree(source) p))",
							  true);
	}
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_VOID();
}

Datum
unlearn_on_ddl_end(PG_FUNCTION_ARGS)
{
	uint64		i;
	List	   *relids = NIL;
	ListCell   *lc;
	ExtensionContext ctx;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		elog(ERROR, "unlearn._on_ddl_end() must be called as an event trigger");
	if (unlearn_changing_triggers)
		PG_RETURN_VOID();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	catalog_queries_without_jit();
	refuse_trigger_impostors();
	citus_guard_shard_triggers(ctx.caller);
	refuse_inheritance_children();
	refuse_retyped_columns();
	sync_partition_sets(ctx.caller);
	/* the trained tables (roots) the commands touched, directly or through a partition */
	if (SPI_execute("SELECT DISTINCT m.source::pg_catalog.oid FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"JOIN unlearn.models m ON m.source = c.objid "
					"OR c.objid IN (SELECT p.relid FROM pg_catalog.pg_partition_tree(m.source) p) "
					"WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		relids = lappend_oid(relids, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
																	SPI_tuptable->tupdesc, 1, &isnull)));
	}
	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		List	   *refs = catalog_models_of_relation(relid);
		ListCell   *lc2;

		foreach(lc2, refs)
		{
			UnlearnModel *m = catalog_load_model(((ModelRef *) lfirst(lc2))->name, false, false, false);

			verify_source_columns(m);
		}
		check_triggers_intact(psprintf("WHERE source = %u", relid), false);
	}
	leave_extension_context(&ctx);
	SPI_finish();
	PG_RETURN_VOID();
}
