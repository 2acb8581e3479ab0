/*-------------------------------------------------------------------------
 *
 * citus_guard.c
 *	  What a Citus distributed table with models refuses, and what its
 *	  drop takes with it (store/citus_queue.c keeps its models).
 *
 *	- TRUNCATE: it fires no row trigger on the shards, so the models could
 *	  not forget the rows (the DELETE path does).
 *	- Renaming the table or moving it to another schema, and renaming its
 *	  schema: the shards' triggers check that their table's name hashes to
 *	  the queue they write, and the apply finds the queue by that name.
 *	- Giving the table another owner than the extension's: its models read
 *	  it as its owner and change its shards as the extension's owner, and
 *	  Citus lets one transaction do both only as one role.
 *	  (DROP TABLE takes the models and the queue with it: trigger.c.)
 *	- On every node, workers included, where no model catalog helps:
 *	  disabling, renaming or dropping a shard trigger, changing a column
 *	  one names, or adding a trigger of one's own to a table with models
 *	  (which the extension's owner owns), unless a superuser does it (Citus
 *	  runs the extension's own changes of the triggers as the superuser
 *	  who made them).
 *
 * A distributed table has models exactly when it carries a shard trigger
 * (unlearn_shard_*, whose function is the extension's): one index scan of
 * pg_trigger says so, without a lock on the table.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_trigger.h"
#include "utils/fmgroids.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/*
 * Whether relid carries a shard trigger of the extension's, read from
 * pg_trigger without locking relid: the utility hook asks before the
 * command takes its own lock, and a weaker lock taken first would turn two
 * sessions' TRUNCATEs into a deadlock.
 */
static bool
has_shard_trigger(Oid relid)
{
	Oid			schema = get_namespace_oid("unlearn", true);
	Relation	triggers;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tuple;
	bool		found = false;

	if (!OidIsValid(relid) || !OidIsValid(schema))
		return false;
	triggers = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_trigger_tgrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(triggers, TriggerRelidNameIndexId, true, NULL, 1, &key);
	while (!found && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_trigger tg = (Form_pg_trigger) GETSTRUCT(tuple);

		found = strncmp(NameStr(tg->tgname), UNLEARN_SHARD_TRIGGER_PREFIX,
						strlen(UNLEARN_SHARD_TRIGGER_PREFIX)) == 0 &&
			get_func_namespace(tg->tgfoid) == schema;
	}
	systable_endscan(scan);
	table_close(triggers, AccessShareLock);
	return found;
}

/* whether relid is a distributed table (not one of its shards) */
static bool
distributed_table(Oid relid)
{
	bool		distributed;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	distributed = citus_distribution(relid) == 'h';
	SPI_finish();
	return distributed;
}

static void
refuse_for_models(Oid relid, const char *what, const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s distributed table \"%s\" because unlearn models are trained on it",
					what, get_rel_name(relid)),
			 errdetail("%s", detail),
			 errhint("%s", hint)));
}

/* a table with models (a shard trigger of the extension's) in schema, or InvalidOid */
static Oid
schema_table_with_models(const char *schema)
{
	Oid			argtypes[2] = {OIDOID, OIDOID};
	Datum		args[2];
	Oid			found = InvalidOid;

	args[0] = ObjectIdGetDatum(get_namespace_oid(schema, true));
	args[1] = ObjectIdGetDatum(get_namespace_oid("unlearn", true));
	if (!OidIsValid(DatumGetObjectId(args[0])) || !OidIsValid(DatumGetObjectId(args[1])))
		return InvalidOid;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT g.tgrelid FROM pg_catalog.pg_trigger g "
							  "JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid "
							  "JOIN pg_catalog.pg_proc f ON f.oid = g.tgfoid "
							  "WHERE c.relnamespace = $1 AND g.tgname LIKE 'unlearn\\_shard\\_%' "
							  "AND f.pronamespace = $2 LIMIT 1",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_trigger");
	if (SPI_processed > 0)
	{
		bool		isnull;

		found = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											   &isnull));
	}
	SPI_finish();
	return found;
}

/*
 * Refuse a utility statement that a distributed table with models cannot
 * take: TRUNCATE, a rename of it or of its schema, a move to another
 * schema.
 */
void
citus_guard_utility(Node *stmt)
{
	static const char *const rename_hint =
		"Drop the table's models with unlearn_drop(), rename, and train them again.";
	static const char *const rename_detail =
		"Its shards' triggers and its models find the table's queue by the table's name.";

	if (IsA(stmt, TruncateStmt))
	{
		ListCell   *lc;

		foreach(lc, ((TruncateStmt *) stmt)->relations)
		{
			Oid			relid = RangeVarGetRelid((RangeVar *) lfirst(lc), NoLock, true);

			if (has_shard_trigger(relid))
				refuse_for_models(relid, "truncate",
								  "TRUNCATE does not fire row deletion triggers, so the models could not forget the rows.",
								  "Use DELETE to erase rows with certified removal, or drop the models with unlearn_drop() first.");
		}
	}
	else if (IsA(stmt, RenameStmt))
	{
		RenameStmt *rs = (RenameStmt *) stmt;

		if (rs->renameType == OBJECT_TABLE && rs->relation != NULL)
		{
			Oid			relid = RangeVarGetRelid(rs->relation, NoLock, true);

			if (has_shard_trigger(relid))
				refuse_for_models(relid, "rename", rename_detail, rename_hint);
		}
		else if (rs->renameType == OBJECT_SCHEMA && rs->subname != NULL)
		{
			Oid			relid = schema_table_with_models(rs->subname);

			if (OidIsValid(relid))
				refuse_for_models(relid, "rename the schema of", rename_detail, rename_hint);
		}
	}
	else if (IsA(stmt, AlterTableStmt) && ((AlterTableStmt *) stmt)->relation != NULL)
	{
		AlterTableStmt *at = (AlterTableStmt *) stmt;
		ListCell   *lc;

		foreach(lc, at->cmds)
		{
			AlterTableCmd *cmd = (AlterTableCmd *) lfirst(lc);
			Oid			relid;

			if (cmd->subtype != AT_ChangeOwner)
				continue;
			relid = RangeVarGetRelid(at->relation, NoLock, true);
			if (has_shard_trigger(relid) &&
				get_rolespec_oid(cmd->newowner, false) != extension_owner() &&
				distributed_table(relid))
				refuse_for_models(relid, "change the owner of",
								  "Its models read it as its owner and change its shards as the extension's owner, which Citus lets one transaction do only as one role.",
								  "Drop the table's models with unlearn_drop() first.");
		}
	}
	else if (IsA(stmt, AlterObjectSchemaStmt))
	{
		AlterObjectSchemaStmt *as = (AlterObjectSchemaStmt *) stmt;

		if (as->objectType == OBJECT_TABLE && as->relation != NULL)
		{
			Oid			relid = RangeVarGetRelid(as->relation, NoLock, true);

			if (has_shard_trigger(relid))
				refuse_for_models(relid, "move", rename_detail, rename_hint);
		}
	}
}

static void
refuse_shard_trigger_change(const char *table)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 errmsg("the unlearn shard triggers of \"%s\" must stay as they are", table),
			 errdetail("The models of its distributed table rely on them, with the columns they name, to forget deleted rows."),
			 errhint("Drop the models with unlearn_drop() on the coordinator first.")));
}

/*
 * The trigger of relid (a shard, or the distributed table itself) whose
 * function is unlearn._shard_queue() and which names a column that relid
 * no longer has, or is not enabled as created (ENABLE, origin), or lost
 * its name: the relation's name, or NULL.
 */
static const char *
shard_trigger_broken(Oid relid, Oid shard_queue)
{
	Relation	rel;
	const char *broken = NULL;
	int			i,
				j;

	if (get_rel_relkind(relid) != RELKIND_RELATION)
		return NULL;
	rel = table_open(relid, AccessShareLock);
	for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers && broken == NULL; i++)
	{
		Trigger    *tg = &rel->trigdesc->triggers[i];

		if (tg->tgfoid != shard_queue)
			continue;
		if (tg->tgenabled != TRIGGER_FIRES_ON_ORIGIN ||
			strncmp(tg->tgname, UNLEARN_SHARD_TRIGGER_PREFIX, strlen(UNLEARN_SHARD_TRIGGER_PREFIX)) != 0)
			broken = RelationGetRelationName(rel);
		/* the label and the features, from the ninth argument on */
		for (j = 8; j < tg->tgnargs && broken == NULL; j++)
			if (get_attnum(relid, tg->tgargs[j]) == InvalidAttrNumber)
				broken = RelationGetRelationName(rel);
	}
	broken = broken != NULL ? pstrdup(broken) : NULL;
	table_close(rel, AccessShareLock);
	return broken;
}

/*
 * In the ddl_command_end event trigger, on every node (SPI connected, the
 * extension's context): a command of caller that disabled, renamed or set
 * to REPLICA or ALWAYS a shard trigger, or dropped, renamed or retyped a
 * column one names, is refused unless caller is a superuser.  A worker
 * has no model catalog, so this is what keeps a table owner (directly on
 * a worker, or through run_command_on_shards) from switching off a
 * model's shard triggers; Citus runs the extension's own changes of them
 * as the superuser who made them.
 */
void
citus_guard_shard_triggers(Oid caller)
{
	Oid			shard_queue;
	List	   *relids = NIL;
	ListCell   *lc;
	uint64		i;

	if (superuser_arg(caller))
		return;
	shard_queue = LookupFuncName(list_make2(makeString("unlearn"), makeString("_shard_queue")),
								 0, NULL, true);
	if (!OidIsValid(shard_queue))
		return;
	if (SPI_execute("SELECT DISTINCT CASE WHEN c.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass "
					"THEN (SELECT g.tgrelid FROM pg_catalog.pg_trigger g WHERE g.oid = c.objid) "
					"ELSE c.objid END "
					"FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"WHERE c.classid IN ('pg_catalog.pg_class'::pg_catalog.regclass, "
					"'pg_catalog.pg_trigger'::pg_catalog.regclass)",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			relids = lappend_oid(relids, DatumGetObjectId(d));
	}
	foreach(lc, relids)
	{
		const char *broken = shard_trigger_broken(lfirst_oid(lc), shard_queue);

		if (broken != NULL)
			refuse_shard_trigger_change(broken);
	}

	/*
	 * A trigger of a role's own on a table with models: the table belongs to
	 * the extension's owner, so its code would run as every role that
	 * writes the table, the superuser included.
	 */
	if (SPI_execute("SELECT g.tgrelid FROM pg_catalog.pg_event_trigger_ddl_commands() c "
					"JOIN pg_catalog.pg_trigger g ON g.oid = c.objid "
					"WHERE c.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass "
					"AND c.command_tag = 'CREATE TRIGGER'",
					false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));

		if (has_shard_trigger(relid))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("only a superuser can add a trigger to \"%s\", which has unlearn models",
							get_rel_name(relid)),
					 errdetail("The table belongs to the extension's owner: a trigger's function would run as every role that writes it."),
					 errhint("Ask a superuser to attach it.")));
	}
}

/*
 * In the sql_drop event trigger, on every node: a shard trigger dropped
 * from a relation that stays, by a caller who is not a superuser.
 */
void
citus_guard_dropped_shard_triggers(Oid caller)
{
	if (superuser_arg(caller))
		return;
	if (SPI_execute("SELECT d.address_names[2] FROM pg_catalog.pg_event_trigger_dropped_objects() d "
					"WHERE d.object_type = 'trigger' "
					"AND d.address_names[3] LIKE 'unlearn\\_shard\\_%' "
					"AND pg_catalog.to_regclass(pg_catalog.quote_ident(d.address_names[1]) || '.' || "
					"pg_catalog.quote_ident(d.address_names[2])) IS NOT NULL LIMIT 1",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	if (SPI_processed > 0)
		refuse_shard_trigger_change(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}
