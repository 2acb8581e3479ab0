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
 *	- DROP TABLE: the models go with the table (trigger.c), and its queue
 *	  with them here.
 *
 * A distributed table has models exactly when it carries a shard trigger
 * (unlearn_shard_*, whose function is the extension's): the relcache says
 * so without a catalog query, on the statement's path.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#define SHARD_TRIGGER_PREFIX "unlearn_shard_"

/* whether relid carries a shard trigger of the extension's */
static bool
has_shard_trigger(Oid relid)
{
	Relation	rel;
	bool		found = false;
	Oid			schema = get_namespace_oid("unlearn", true);
	int			i;

	if (!OidIsValid(relid) || !OidIsValid(schema) || get_rel_relkind(relid) != RELKIND_RELATION)
		return false;
	rel = table_open(relid, AccessShareLock);
	for (i = 0; rel->trigdesc != NULL && i < rel->trigdesc->numtriggers && !found; i++)
	{
		Trigger    *tg = &rel->trigdesc->triggers[i];

		found = strncmp(tg->tgname, SHARD_TRIGGER_PREFIX, strlen(SHARD_TRIGGER_PREFIX)) == 0 &&
			get_func_namespace(tg->tgfoid) == schema;
	}
	table_close(rel, AccessShareLock);
	return found;
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

/* a schema that holds a distributed table with models */
static Oid
schema_table_with_models(const char *schema)
{
	Oid			nsp = get_namespace_oid(schema, true);
	Oid			found = InvalidOid;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	uint64		i;

	if (!OidIsValid(nsp))
		return InvalidOid;
	args[0] = ObjectIdGetDatum(nsp);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT DISTINCT g.tgrelid FROM pg_catalog.pg_trigger g "
							  "JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid "
							  "WHERE c.relnamespace = $1 AND g.tgname LIKE 'unlearn\\_shard\\_%'",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_trigger");
	for (i = 0; i < SPI_processed && !OidIsValid(found); i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));

		if (has_shard_trigger(relid))
			found = relid;
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

/*
 * In the sql_drop event trigger (SPI connected, the extension's context):
 * the queues of the dropped distributed tables with models.
 */
void
citus_drop_queues_of_dropped(void)
{
	List	   *tables = NIL;
	ListCell   *lc;
	uint64		i;

	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return;
	if (SPI_execute("SELECT d.schema_name || '.' || d.object_name "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() d "
					"WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objsubid = 0 "
					"AND d.object_type = 'table' AND d.schema_name <> 'unlearn'",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	for (i = 0; i < SPI_processed; i++)
		tables = lappend(tables, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	foreach(lc, tables)
		citus_drop_queue((const char *) lfirst(lc));
}
