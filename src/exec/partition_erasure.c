/*-------------------------------------------------------------------------
 *
 * partition_erasure.c
 *	  Rows that leave a trained table without a DML statement, as an
 *	  erasure: a partition DETACHed or DROPped, a table of a trained tree
 *	  TRUNCATEd.  Before the command runs (the utility hook, trigger.c) the
 *	  rows that will leave are counted, per cohort, for every immediate
 *	  model of the tree; after it, each model whose leaving rows are whole
 *	  cohorts it keeps (or no row of it at all, or every row of it) forgets
 *	  them from their statistics (cohorts.c) instead of retraining.
 *
 * Invariants:
 *	- The count runs after the command's own locks are taken (the same
 *	  locks, in the same order as every such command through this hook:
 *	  the parent, then the partition), so no row enters or leaves the
 *	  partition between the count and the command; and only for a role
 *	  that may run the command (owner, or TRUNCATE privilege), so that
 *	  no role queues a lock it could not hold.
 *	- A model whose rows cannot be forgotten this way is left to the
 *	  usual path: DETACH and DROP retrain it (sync_partition_sets), and
 *	  TRUNCATE stays refused unless every model of the tree forgets.
 *	- The counts are those of the current command only: cleared when it
 *	  ends, successfully or not.
 *
 * Cost: one scan of the leaving rows, reading the model's columns and
 * the cohort column, O(rows leaving); then per model O(p^3) per cohort
 * (or O(n p) per measuring pass), against a retraining's O(n p^2) passes.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/xact.h"
#include "catalog/heap.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "partitioning/partdesc.h"
#include "partitioning/partbounds.h"
#include "utils/partcache.h"
#include "access/relation.h"
#include "utils/rel.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* one model's rows that a command will take out of its table */
typedef struct LeavingRows
{
	char	   *model;
	Oid			root;
	Oid			target;			/* the table the command names */
	List	   *leaves;			/* the tables whose rows leave */
	List	   *truncated;		/* TRUNCATE: the tables the guard saw go */
	bool		truncate;
	int			nkeys;
	char	  **keys;			/* cohort keys of the leaving model rows */
	int64	   *counts;			/* and their model rows */
	int64		rows;			/* model rows leaving */
	int64		outside;		/* rows outside the model leaving */
	bool		forgettable;	/* whole kept cohorts, none, or all rows */
	char	   *version;		/* the model's catalog row when counted */
} LeavingRows;

static List *leaving = NIL;		/* of LeavingRows, in TopTransactionContext */

/* the top of relid's partition tree */
static Oid
tree_root(Oid relid)
{
	List	   *ancestors = get_partition_ancestors(relid);

	return ancestors == NIL ? relid : llast_oid(ancestors);
}

/*
 * relid's leaf tables: itself, or its leaf partitions; every table of
 * its tree is locked as TRUNCATE locks them, so that no row enters or
 * leaves them before the command runs
 */
static List *
locked_leaf_tables(Oid relid)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, find_all_inheritors(relid, AccessExclusiveLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) != RELKIND_PARTITIONED_TABLE)
			out = lappend_oid(out, lfirst_oid(lc));
	return out;
}

/*
 * The version of model name's catalog row (xmin and ctid): every change
 * of the model rewrites it, so a change between the count and the apply
 * (a trigger of the command writing the table) shows.
 */
static char *
model_version(const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		v[1];

	v[0] = CStringGetTextDatum(name);
	if (SPI_execute_with_args("SELECT xmin::text || ctid::text FROM unlearn.models WHERE model = $1",
							  1, types, v, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read model \"%s\"", name);
	return SPI_processed == 1 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : pstrdup("");
}

/*
 * The leaving rows of m without a scan, when its table's partitions are
 * its cohorts: a single leaf, a partition of the table itself, which is
 * partitioned BY LIST on the cohort column alone (a deterministic
 * collation, not the default partition), every row of the table a model
 * row, and every model row in a cohort kept.  The leaf then holds exactly
 * the rows of the kept cohorts its bound lists.  Returns false if that
 * does not apply.  O(keys of the bound).
 */
static bool
count_leaving_from_bounds(UnlearnModel *m, LeavingRows *lr)
{
	Oid			leaf = linitial_oid(lr->leaves);
	Oid			types[1] = {TEXTOID};
	Datum		v[1];
	bool		isnull;
	Relation	rel;
	PartitionKey key;
	PartitionDesc desc;
	AttrNumber	attnum;
	Oid			base;
	int			idx = -1;
	int			i,
				n = 0;
	bool		applies;
	char	  **keys;
	int64	   *rows;

	if (m->def.cohort == NULL || m->released.skipped != 0 || m->def.filter != NULL ||
		list_length(lr->leaves) != 1 ||
		!get_rel_relispartition(leaf) || get_partition_parent(leaf, true) != m->def.source)
		return false;
	attnum = get_attnum(m->def.source, m->def.cohort);
	if (attnum <= 0)
		return false;
	v[0] = CStringGetTextDatum(m->def.name);
	if (SPI_execute_with_args("SELECT pg_catalog.sum(rows) FROM unlearn.cohorts WHERE model = $1",
							  1, types, v, NULL, false, 0) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the cohorts of model \"%s\"", m->def.name);
	{
		Datum		total = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (isnull || DatumGetFloat8(DirectFunctionCall1(numeric_float8, total)) != (double) m->released.rows)
			return false;
	}
	base = getBaseType(get_atttype(m->def.source, attnum));
	rel = relation_open(m->def.source, AccessShareLock);
	key = RelationGetPartitionKey(rel);
	desc = RelationGetPartitionDesc(rel, false);
	applies = key != NULL && key->strategy == PARTITION_STRATEGY_LIST && key->partnatts == 1 &&
		key->partattrs[0] == attnum &&
		(!OidIsValid(key->partcollation[0]) || get_collation_isdeterministic(key->partcollation[0]));
	for (i = 0; applies && i < desc->nparts; i++)
		if (desc->oids[i] == leaf)
			idx = i;
	applies = applies && idx >= 0 && desc->boundinfo != NULL && desc->boundinfo->default_index != idx;
	keys = palloc(sizeof(char *) * Max(applies ? desc->boundinfo->ndatums : 0, 1));
	for (i = 0; applies && i < desc->boundinfo->ndatums; i++)
		if (desc->boundinfo->indexes[i] == idx)
		{
			char	   *k = cohort_key(base, desc->boundinfo->datums[i][0]);

			if (k == NULL)
				continue;		/* too long to be kept: no model row has it */
			keys[n++] = MemoryContextStrdup(TopTransactionContext, k);
		}
	relation_close(rel, AccessShareLock);
	if (!applies)
		return false;
	rows = palloc0(sizeof(int64) * Max(n, 1));
	if (n > 0)
		cohort_store_rows(m, keys, rows, n);
	lr->keys = MemoryContextAlloc(TopTransactionContext, sizeof(char *) * Max(n, 1));
	lr->counts = MemoryContextAlloc(TopTransactionContext, sizeof(int64) * Max(n, 1));
	lr->nkeys = 0;
	for (i = 0; i < n; i++)
		if (rows[i] > 0)
		{
			lr->keys[lr->nkeys] = keys[i];
			lr->counts[lr->nkeys++] = rows[i];
			lr->rows += rows[i];
		}
	lr->outside = 0;
	lr->forgettable = true;
	return true;
}

/*
 * Count, for model m, the rows of the leaves by cohort key into lr: its
 * model rows per key, and the rows outside it.  As the table's owner.
 */
static void
count_leaving(UnlearnModel *m, LeavingRows *lr)
{
	StringInfoData cond;
	ExtensionContext ctx;
	Oid			base = InvalidOid;
	ListCell   *lc;
	List	   *keys = NIL;
	List	   *counts = NIL;
	int			i;

	if (count_leaving_from_bounds(m, lr))
		return;
	initStringInfo(&cond);
	append_model_row_condition(m, &cond, 1, true);
	if (m->def.cohort != NULL)
		base = getBaseType(get_atttype(m->def.source, get_attnum(m->def.source, m->def.cohort)));
	lr->forgettable = true;
	enter_table_owner_context(m->def.source, &ctx);
	foreach(lc, lr->leaves)
	{
		Oid			leaf = lfirst_oid(lc);
		uint64		r;

		if (execute_with_model_condition(m, psprintf("SELECT %s%s, pg_catalog.count(*) FILTER (WHERE %s), "
													 "pg_catalog.count(*) FROM ONLY %s GROUP BY 1",
													 m->def.cohort != NULL ? quote_identifier(m->def.cohort) : "NULL::text",
													 m->def.cohort != NULL ? cohort_collation(base) : "",
													 cond.data, model_rows_of(m, relation_qualified_name(leaf))),
										 0) != SPI_OK_SELECT)
			elog(ERROR, "could not count the rows of %s", relation_qualified_name(leaf));
		for (r = 0; r < SPI_processed; r++)
		{
			HeapTuple	tup = SPI_tuptable->vals[r];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;
			Datum		d = SPI_getbinval(tup, desc, 1, &isnull);
			int64		kept = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
			int64		all = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
			char	   *key = NULL;

			lr->rows += kept;
			lr->outside += all - kept;
			if (kept == 0)
				continue;
			if (m->def.cohort != NULL && !isnull)
			{
				MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

				key = cohort_key(base, d);
				MemoryContextSwitchTo(old);
			}
			if (key == NULL)
				lr->forgettable = false;	/* rows in no cohort */
			else
			{
				int64	   *count = MemoryContextAlloc(TopTransactionContext, sizeof(int64));

				*count = kept;
				keys = lappend(keys, key);
				counts = lappend(counts, count);
			}
		}
	}
	leave_extension_context(&ctx);
	lr->nkeys = list_length(keys);
	lr->keys = MemoryContextAlloc(TopTransactionContext, sizeof(char *) * Max(lr->nkeys, 1));
	lr->counts = MemoryContextAlloc(TopTransactionContext, sizeof(int64) * Max(lr->nkeys, 1));
	i = 0;
	foreach(lc, keys)
	{
		lr->keys[i] = (char *) lfirst(lc);
		lr->counts[i] = *(int64 *) list_nth(counts, i);
		i++;
	}
	/* no model row, or all of them, leave: nothing to take from statistics */
	if (lr->rows == 0 || lr->rows == m->released.rows)
		lr->forgettable = true;
	else if (m->def.cohort == NULL || !MODEL_KEEPS_STATE(m))
		lr->forgettable = false;
}

static LeavingRows *
leaving_rows_of(const char *model)
{
	ListCell   *lc;

	foreach(lc, leaving)
		if (strcmp(((LeavingRows *) lfirst(lc))->model, model) == 0)
			return (LeavingRows *) lfirst(lc);
	return NULL;
}

typedef struct CountWork
{
	UnlearnModel *m;
	LeavingRows *lr;
} CountWork;

static void
count_work(void *arg)
{
	CountWork  *work = (CountWork *) arg;

	count_leaving(work->m, work->lr);
}

/* a count that fails leaves the model to the usual path; a cancel does not */
static bool
count_failure_survivable(const ErrorData *edata, void *arg)
{
	return edata->sqlerrcode != ERRCODE_QUERY_CANCELED &&
		edata->sqlerrcode != ERRCODE_ADMIN_SHUTDOWN;
}

/*
 * The rows of leaves will leave root's tree: count them for each
 * immediate model of the tree (LeavingRows), after taking the command's
 * locks.
 */
static void
prepare_leaving(Oid root, Oid parent, Oid relid, bool truncate)
{
	List	   *refs = catalog_models_of_relation(root);
	List	   *leaves;
	ListCell   *lc;

	if (refs == NIL)
		return;
	if (OidIsValid(parent))
		LockRelationOid(parent, AccessExclusiveLock);
	LockRelationOid(relid, AccessExclusiveLock);
	leaves = locked_leaf_tables(relid);
	foreach(lc, refs)
	{
		ModelRef   *ref = (ModelRef *) lfirst(lc);
		UnlearnModel *m;
		LeavingRows *lr;
		MemoryContext old;

		if (ref->deferred)
			continue;
		m = catalog_load_model(ref->name, false, false, true);
		if (m == NULL)
			continue;
		old = MemoryContextSwitchTo(TopTransactionContext);
		if ((lr = leaving_rows_of(ref->name)) != NULL)
		{
			/* a second table of the same command: the usual path */
			lr->leaves = list_concat(lr->leaves, leaves);
			lr->forgettable = false;
			MemoryContextSwitchTo(old);
			continue;
		}
		lr = palloc0(sizeof(LeavingRows));
		lr->model = pstrdup(ref->name);
		lr->root = root;
		lr->target = relid;
		lr->leaves = list_copy(leaves);
		lr->truncate = truncate;
		MemoryContextSwitchTo(old);
		{
			CountWork	work = {m, lr};
			ErrorData  *failure = run_in_subtransaction(count_work, &work, count_failure_survivable);

			if (failure != NULL)
			{
				/* rows it may not count (a forced policy, a failing expression): the usual path */
				FreeErrorData(failure);
				lr->forgettable = false;
				lr->nkeys = 0;
			}
			else if (m->released.status != MODEL_READY)
				lr->forgettable = true; /* it only counts rows */
		}
		lr->version = MemoryContextStrdup(TopTransactionContext, model_version(ref->name));
		old = MemoryContextSwitchTo(TopTransactionContext);
		leaving = lappend(leaving, lr);
		MemoryContextSwitchTo(old);
	}
}

/* a table whose rows a command will take out of a trained tree */
typedef struct LeavingTable
{
	Oid			root;
	Oid			parent;			/* to lock first (DETACH, DROP), or 0 */
	Oid			relid;
	bool		truncate;
} LeavingTable;

/*
 * Add relid to *out if it is in a tree with models and the caller may run
 * the command on it (so that no role queues a lock it could not hold).
 * Names are resolved as the caller resolves them, before the extension's
 * context; partition_erasure_apply and the TRUNCATE guard check that the
 * command took out exactly the tables counted.
 */
static void
add_leaving(List **out, Oid relid, Oid parent, bool truncate)
{
	LeavingTable *t;
	Oid			root;

	if (!OidIsValid(relid))
		return;
	if (truncate ? pg_class_aclcheck(relid, GetUserId(), ACL_TRUNCATE) != ACLCHECK_OK :
		!pg_class_ownercheck(relid, GetUserId()) ||
		(OidIsValid(parent) && !pg_class_ownercheck(parent, GetUserId())))
		return;
	root = tree_root(relid);
	t = palloc(sizeof(LeavingTable));
	t->root = root;
	t->parent = parent;
	t->relid = relid;
	t->truncate = truncate;
	*out = lappend(*out, t);
}

static List *
leaving_tables(Node *stmt)
{
	List	   *out = NIL;
	ListCell   *lc;

	if (IsA(stmt, TruncateStmt))
	{
		TruncateStmt *truncate = (TruncateStmt *) stmt;
		List	   *relids = NIL;
		ListCell   *lc2;

		foreach(lc, truncate->relations)
		{
			Oid			relid = RangeVarGetRelid((RangeVar *) lfirst(lc), NoLock, true);

			if (OidIsValid(relid))
				relids = list_append_unique_oid(relids, relid);
		}
		/* CASCADE: the tables whose foreign keys reach them, as TRUNCATE finds them */
		if (truncate->behavior == DROP_CASCADE)
		{
			List	   *all = NIL;
			List	   *more;

			foreach(lc, relids)
				foreach(lc2, find_all_inheritors(lfirst_oid(lc), NoLock, NULL))
					all = list_append_unique_oid(all, lfirst_oid(lc2));
			while ((more = heap_truncate_find_FKs(all)) != NIL)
			{
				foreach(lc, more)
				{
					all = list_append_unique_oid(all, lfirst_oid(lc));
					relids = list_append_unique_oid(relids, lfirst_oid(lc));
				}
			}
		}
		foreach(lc, relids)
			add_leaving(&out, lfirst_oid(lc), InvalidOid, true);
	}
	else if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_TABLE)
	{
		foreach(lc, ((DropStmt *) stmt)->objects)
		{
			Oid			relid = RangeVarGetRelid(makeRangeVarFromNameList((List *) lfirst(lc)),
												 NoLock, true);

			if (OidIsValid(relid) && get_rel_relispartition(relid))
				add_leaving(&out, relid, get_partition_parent(relid, false), false);
		}
	}
	else if (IsA(stmt, AlterTableStmt))
	{
		AlterTableStmt *alter = (AlterTableStmt *) stmt;
		Oid			parent = RangeVarGetRelid(alter->relation, NoLock, true);

		foreach(lc, alter->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);
			PartitionCmd *pc;

			if (cmd->subtype != AT_DetachPartition || !OidIsValid(parent))
				continue;
			pc = (PartitionCmd *) cmd->def;
			/* CONCURRENTLY runs in transactions of its own: the usual path */
			if (!pc->concurrent)
				add_leaving(&out, RangeVarGetRelid(pc->name, NoLock, true), parent, false);
		}
	}
	return out;
}

/*
 * Before a utility command: count the rows it will take out of trained
 * tables.  Returns whether there were any (partition_erasure_finish
 * must then run after the command, or partition_erasure_clear if it
 * fails).
 */
bool
partition_erasure_prepare(Node *stmt)
{
	ExtensionContext ctx;
	List	   *tables;
	ListCell   *lc;

	if (!IsA(stmt, TruncateStmt) && !IsA(stmt, DropStmt) && !IsA(stmt, AlterTableStmt))
		return false;
	if (!IsTransactionState() || !state_store_available() ||
		!OidIsValid(get_namespace_oid("unlearn", true)))
		return false;
	tables = leaving_tables(stmt);
	if (tables == NIL)
		return false;
	/* a statement writing the tree would apply its rows to models retrained meanwhile */
	foreach(lc, tables)
		refuse_in_statement(((LeavingTable *) lfirst(lc))->root, "take partitions out of");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	catalog_queries_without_jit();
	foreach(lc, tables)
	{
		LeavingTable *t = (LeavingTable *) lfirst(lc);

		prepare_leaving(t->root, t->parent, t->relid, t->truncate);
	}
	leave_extension_context(&ctx);
	SPI_finish();
	return leaving != NIL;
}

void
partition_erasure_clear(void)
{
	leaving = NIL;
}

/*
 * A command nested in another (a trigger of a TRUNCATE running DDL) has
 * counts of its own: the hook saves the outer command's, and restores
 * them when the nested one ends, successfully or not.
 */
List *
partition_erasure_save(void)
{
	List	   *saved = leaving;

	leaving = NIL;
	return saved;
}

void
partition_erasure_restore(List *saved)
{
	leaving = saved;
}

/* nothing outlives its transaction (the lists are in TopTransactionContext) */
static void
partition_erasure_xact_callback(XactEvent event, void *arg)
{
	leaving = NIL;
}

void
partition_erasure_init(void)
{
	RegisterXactCallback(partition_erasure_xact_callback, NULL);
}

/*
 * May TRUNCATE go through on relid (the TRUNCATE guard, trigger.c)?  Yes
 * if its tree has no deferred model and this command counted its rows
 * for every model: each then forgets them after the command, from its
 * cohorts' statistics or by retraining (partition_erasure_finish).
 */
bool
partition_erasure_allows_truncate(Oid relid)
{
	Oid			root = tree_root(relid);
	List	   *refs = catalog_models_of_relation(root);
	ListCell   *lc;

	foreach(lc, refs)
	{
		ModelRef   *ref = (ModelRef *) lfirst(lc);
		LeavingRows *lr = leaving_rows_of(ref->name);

		if (ref->deferred || lr == NULL || !lr->truncate ||
			!(relid == lr->target || list_member_oid(lr->leaves, relid) ||
			  list_member_oid(get_partition_ancestors(relid), lr->target)))
			return false;
	}
	foreach(lc, refs)
	{
		LeavingRows *lr = leaving_rows_of(((ModelRef *) lfirst(lc))->name);
		MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

		lr->truncated = lappend_oid(lr->truncated, relid);
		MemoryContextSwitchTo(old);
	}
	return refs != NIL;
}

/*
 * Whether m, whose table lost the tables lost (leaves among them) without
 * a statement, forgets their rows here (sync_partition_sets calls this
 * before it would retrain m, partition_erasure_finish after TRUNCATE): if
 * so, m is brought to its table and written with its ledger line.  Every
 * counted table must be among lost.
 */
bool
partition_erasure_apply(UnlearnModel *m, List *lost)
{
	LeavingRows *lr = leaving_rows_of(m->def.name);
	bool		done = false;
	ListCell   *lc;

	if (lr == NULL || !lr->forgettable)
		return false;
	/* exactly the counted tables left (a name may have moved meanwhile) */
	foreach(lc, lr->leaves)
		if (!list_member_oid(lost, lfirst_oid(lc)))
			return false;
	/* and the model did not change since the count (a trigger of the command) */
	if (strcmp(lr->version, model_version(m->def.name)) != 0)
		return false;
	if (m->released.status == MODEL_READY && lr->rows == 0)
	{
		/* no row of the model left: only the rows outside it are counted */
		if (lr->outside > 0)
			catalog_count_skipped(m->def.name, -lr->outside);
		catalog_ledger(m, lr->truncate ? "truncate" : "repartition", 0, 0, 0.0, false);
		lr->forgettable = false;
		return true;
	}
	m->released.removed += lr->rows;
	m->released.skipped = Max(m->released.skipped - lr->outside, 0);
	if (m->released.status != MODEL_READY)
	{
		/*
		 * its rows less those that left, counted by its row condition, which
		 * also counts a row a failing expression had left outside
		 */
		m->released.rows = Max(m->released.rows - lr->rows, 0);
		/* a model that releases nothing keeps no taken category */
		taken_categories_forget(m);
		done = true;
	}
	else if (m->released.rows - lr->rows < m->def.p)
	{
		/* too few rows left: it rests, releasing and keeping nothing */
		retrain_or_rest(m, false, NULL);
		done = true;
	}
	else
	{
		catalog_checkout_matrices(m);
		done = cohorts_erase_counted(m, lr->keys, lr->counts, lr->nkeys);
	}
	if (!done)
	{
		m->released.removed -= lr->rows;
		m->released.skipped += lr->outside;
		return false;
	}
	catalog_update_model(m);
	cohorts_after_change(m, NULL, NULL);
	if (cohorts_write_ledger(m) == 0)
		catalog_ledger(m, lr->truncate ? "truncate" : "repartition", lr->rows, 0, 0.0,
					   m->call.retrained_now);
	lr->forgettable = false;	/* applied once */
	return true;
}

/*
 * After the command: the models whose rows left by TRUNCATE (which no
 * event trigger follows) forget them.  DETACH and DROP are followed by
 * sync_partition_sets, which calls partition_erasure_apply.
 */
void
partition_erasure_finish(void)
{
	ExtensionContext ctx;
	ListCell   *lc;

	if (leaving == NIL)
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	foreach(lc, leaving)
	{
		LeavingRows *lr = (LeavingRows *) lfirst(lc);
		UnlearnModel *m;

		if (!lr->truncate)
			continue;
		m = catalog_load_model(lr->model, true, true, true);
		if (m == NULL || (model_owner_may_read(m) && partition_erasure_apply(m, lr->truncated)))
			continue;
		retrain_after_rows_left(m, ctx.caller, "truncate", "Rows of its table were truncated.");
	}
	leave_extension_context(&ctx);
	SPI_finish();
	leaving = NIL;
}
