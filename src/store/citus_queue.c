/*-------------------------------------------------------------------------
 *
 * citus_queue.c
 *	  The queue of the models of a Citus distributed table.
 *
 * A distributed table's rows live in shards on the workers, and their
 * writes fire the shards' triggers, never the table's on the coordinator.
 * So a model of such a table ("removal": "async") is kept by a row trigger
 * that Citus copies to every shard, unlearn._shard_queue()
 * (exec/shard_trigger.c), which queues each changed row's contribution in
 * the table's queue, a distributed table co-located with it: a shard's
 * entries go to the queue shard on the same worker, in the same
 * transaction, and the coordinator's apply consumes them with one
 * DELETE ... RETURNING (deferred.c).
 *
 * Names.  The queue of table t is unlearn.citus_queue_<h>, h the first 16
 * hexadecimal digits of md5 of t's quoted qualified name; the trigger of
 * model m is unlearn_shard_<k>, k those of md5 of m's name.  A shard's trigger
 * checks that its table's name hashes to the queue it is given, so a
 * trigger on one table can write no other table's queue.
 *
 * Invariants:
 *	- The queue is created by the extension's owner (a superuser) with the
 *	  table's first model, and dropped with its last: no other role holds
 *	  a right on it, on the coordinator or the workers.  Its columns are
 *	  (key, model, change, contribution): key is the row's value of the
 *	  table's distribution column (a built-in base type), so that Citus's
 *	  splits and moves take each entry with its row's shard; change is -1
 *	  or +1, and contribution is the queued-row format of deferred.c.
 *	- Each model of the table has its own trigger, whose arguments hold
 *	  everything a worker needs to decode its rows (the worker has no
 *	  catalog of the models): model, table, queue, loss, nulls, d, p,
 *	  whether the features are one array, the label and the feature
 *	  columns.  unlearn_train writes it again (replace => true).
 *	- DDL on the table goes through the coordinator (Citus propagates it
 *	  to the shards); these functions run it with
 *	  citus.enable_unsafe_triggers on for that DDL only.
 *
 * Cost: a training's attach costs four DDL statements that Citus runs on
 * every shard (the provisional trigger's drop and create, then the final
 * one's); taking the queue one multi-shard DELETE, O(n_queue p) bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "access/transam.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "common/md5.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#define CITUS_HASH_DIGITS 16

/* the first CITUS_HASH_DIGITS hexadecimal digits of md5 of text */
static char *
short_md5(const char *text)
{
	char		hex[33];
	const char *errstr = NULL;

	if (!pg_md5_hash(text, strlen(text), hex, &errstr))
		elog(ERROR, "could not hash a name: %s", errstr);
	return pnstrdup(hex, CITUS_HASH_DIGITS);
}

/*
 * How Citus distributes relid: its pg_dist_partition.partmethod ('h' hash,
 * 'n' a reference or Citus-local table, 'a' append, 'r' range), or '\0'
 * for a table Citus does not manage (or no Citus at all).
 */
char
citus_distribution(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	char		method = '\0';

	if (!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return '\0';
	args[0] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT partmethod FROM pg_catalog.pg_dist_partition "
							  "WHERE logicalrelid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_partition");
	if (SPI_processed > 0)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			method = DatumGetChar(d);
	}
	return method;
}

/* whether relid is a shard of a distributed table (Citus keeps shards hidden) */
bool
citus_is_shard(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];
	bool		isnull;
	Datum		d;

	if (!OidIsValid(get_relname_relid("pg_dist_shard", PG_CATALOG_NAMESPACE)))
		return false;
	args[0] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT pg_catalog.relation_is_a_known_shard($1::pg_catalog.regclass)",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not ask Citus for shards");
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return !isnull && DatumGetBool(d);
}

/*
 * Whether this node is Citus's coordinator: a worker keeps copies of the
 * distributed tables' metadata (theirs and their queues'), which only the
 * coordinator changes.
 */
bool
citus_is_coordinator(void)
{
	bool		isnull;
	Datum		d;

	if (SPI_execute("SELECT pg_catalog.citus_is_coordinator()", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not ask Citus for the coordinator");
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return !isnull && DatumGetBool(d);
}

/* the queue of the table whose qualified name is table, quoted */
char *
citus_queue_name(const char *table)
{
	return psprintf("citus_queue_%s", short_md5(table));
}

/* the name of model's shard trigger */
char *
citus_trigger_name(const char *model)
{
	return psprintf(UNLEARN_SHARD_TRIGGER_PREFIX "%s", short_md5(model));
}

/* the name of the distribution column of hash-distributed relid */
static char *
distribution_column(Oid relid)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1];

	args[0] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT pg_catalog.column_to_column_name(logicalrelid, partkey) "
							  "FROM pg_catalog.pg_dist_partition "
							  "WHERE logicalrelid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the distribution column of %s", relation_qualified_name(relid));
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * The queue's key column takes the type of relid's distribution column
 * (co-location needs it), so that type must be a built-in base type: a
 * domain's default or check, or a role's type, would run in the shards'
 * triggers as the extension's owner.
 */
void
citus_check_distribution_column(Oid relid)
{
	char	   *key = distribution_column(relid);
	Oid			type = get_atttype(relid, get_attnum(relid, key));

	if (type >= FirstNormalObjectId || get_typtype(type) != TYPTYPE_BASE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot train a model on table \"%s\", distributed by column \"%s\" of type %s",
						get_rel_name(relid), key, format_type_be(type)),
				 errdetail("The table's queue is distributed by a column of the same type, which must be a built-in base type."),
				 errhint("Distribute the table by a column of a built-in type, such as integer, bigint, text or uuid.")));
}

/*
 * Run commands, the extension's DDL on distributed table table, with
 * Citus's triggers allowed: one statement each, as Citus sends each to
 * the workers as it is.
 */
static void
run_citus_ddl(List *commands, const char *table)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("citus.enable_unsafe_triggers", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	/* no NOTICE of a DROP TRIGGER IF EXISTS that found none */
	(void) set_config_option("client_min_messages", "warning", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	run_trigger_ddl(commands, table);
	AtEOXact_GUC(true, level);
}

/* the queue of relid */
static char *
queue_of(Oid relid)
{
	return citus_queue_name(relation_qualified_name(relid));
}

/* whether the unlearn schema holds relation name */
static bool
queue_exists(const char *name)
{
	return OidIsValid(get_relname_relid(name, get_namespace_oid("unlearn", false)));
}

/* whether queue (in schema unlearn) is co-located with relid */
static bool
queue_colocated(const char *queue, Oid relid)
{
	Oid			argtypes[2] = {TEXTOID, OIDOID};
	Datum		args[2];

	args[0] = CStringGetTextDatum(queue);
	args[1] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_dist_partition q, pg_catalog.pg_dist_partition t "
							  "WHERE q.logicalrelid = pg_catalog.to_regclass('unlearn.' || "
							  "pg_catalog.quote_ident($1)) AND t.logicalrelid = $2::pg_catalog.regclass "
							  "AND q.colocationid = t.colocationid",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_partition");
	return SPI_processed == 1;
}

/* whether queue (in schema unlearn) holds no entry */
static bool
queue_is_empty(const char *queue)
{
	if (SPI_execute(psprintf("SELECT 1 FROM unlearn.%s LIMIT 1", queue), true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read queue %s", queue);
	return SPI_processed == 0;
}

/* the CREATE TRIGGER of model m's shard trigger; provisional: before d is known */
static char *
shard_trigger_ddl(UnlearnModel *m, const char *table, const char *queue, bool provisional)
{
	StringInfoData q;
	int			j;

	initStringInfo(&q);
	appendStringInfo(&q, "CREATE TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW "
					 "EXECUTE FUNCTION unlearn._shard_queue(%s, %s, %s, %s, %s, '%d', '%d', '%s', %s",
					 citus_trigger_name(m->def.name), table,
					 quote_literal_cstr(m->def.name), quote_literal_cstr(table),
					 quote_literal_cstr(queue),
					 m->def.loss == LOSS_SQUARED ? "'squared'" : "'logistic'",
					 m->def.nulls == NULLS_SKIP ? "'skip'" :
					 m->def.nulls == NULLS_IMPUTE ? "'impute'" : "'error'",
					 provisional ? 0 : m->def.dims, provisional ? 0 : m->def.p,
					 m->def.feature_array ? "array" : "columns", quote_literal_cstr(m->def.label));
	for (j = 0; j < m->def.nfeatures; j++)
		appendStringInfo(&q, ", %s", quote_literal_cstr(m->def.features[j]));
	appendStringInfoChar(&q, ')');
	return q.data;
}

/*
 * Before a training of model m on its hash-distributed table reads a row:
 * drop the model's old shard trigger (waiting for the writers that fire
 * it), drop its queued entries (the training reflects the table), and
 * attach a provisional trigger, whose lock on every shard keeps writers,
 * on the coordinator or directly on a worker, out until the training
 * commits.  The table's queue is created first if it has none.
 * citus_attach_model then gives the trigger its final arguments.
 */
void
citus_prepare_model(UnlearnModel *m)
{
	char	   *table = relation_qualified_name(m->def.source);
	char	   *queue = citus_queue_name(table);
	char	   *trigger = citus_trigger_name(m->def.name);
	List	   *commands = NIL;
	bool		reuse = queue_exists(queue);

	commands = lappend(commands, psprintf("DROP TRIGGER IF EXISTS %s ON %s", trigger, table));
	/*
	 * A queue no longer co-located with its table (a table owner may undo
	 * co-location) is co-located again, keeping its entries; an empty one
	 * is made anew.
	 */
	if (reuse && !queue_colocated(queue, m->def.source))
	{
		if (queue_is_empty(queue))
		{
			commands = lappend(commands, psprintf("DROP TABLE unlearn.%s", queue));
			reuse = false;
		}
		else
			commands = lappend(commands,
							   psprintf("SELECT pg_catalog.update_distributed_table_colocation("
										"'unlearn.%s', colocate_with => %s)",
										queue, quote_literal_cstr(table)));
	}
	if (reuse)
		commands = lappend(commands, psprintf("DELETE FROM unlearn.%s WHERE model = %s", queue,
											  quote_literal_cstr(m->def.name)));
	else
	{
		char	   *key = distribution_column(m->def.source);
		Oid			keytype = get_atttype(m->def.source, get_attnum(m->def.source, key));

		commands = lappend(commands,
						   psprintf("CREATE TABLE unlearn.%s (key %s, model text NOT NULL, "
									"change smallint NOT NULL, contribution bytea)",
									queue, format_type_be_qualified(keytype)));
		commands = lappend(commands,
						   psprintf("SELECT pg_catalog.create_distributed_table('unlearn.%s', 'key', "
									"colocate_with => %s)", queue, quote_literal_cstr(table)));
	}
	commands = lappend(commands, shard_trigger_ddl(m, table, queue, true));
	run_citus_ddl(commands, table);
}

/* after the training of model m: its shard trigger with its final arguments */
void
citus_attach_model(UnlearnModel *m)
{
	char	   *table = relation_qualified_name(m->def.source);

	run_citus_ddl(list_make2(psprintf("DROP TRIGGER %s ON %s", citus_trigger_name(m->def.name), table),
							 shard_trigger_ddl(m, table, citus_queue_name(table), false)),
				  table);
}

/*
 * Detach model's shard trigger from relid, if Citus distributes it, after
 * the model left the catalog: drop its entries, or with the table's last
 * model (last) the table's queue.
 */
void
citus_detach_model(const char *model, Oid relid, bool last)
{
	char	   *table;
	char	   *queue;
	List	   *commands;

	if (get_rel_name(relid) == NULL || citus_distribution(relid) != 'h')
		return;
	table = relation_qualified_name(relid);
	queue = citus_queue_name(table);
	commands = list_make1(psprintf("DROP TRIGGER IF EXISTS %s ON %s", citus_trigger_name(model),
								   table));
	if (queue_exists(queue))
	{
		if (last)
			commands = lappend(commands, psprintf("DROP TABLE unlearn.%s", queue));
		else
			commands = lappend(commands, psprintf("DELETE FROM unlearn.%s WHERE model = %s", queue,
												  quote_literal_cstr(model)));
	}
	run_citus_ddl(commands, table);
}

/*
 * Consume model's queued entries on hash-distributed relid: delete them,
 * returning (change, contribution) in SPI_tuptable.
 */
void
citus_take_queue(const char *model, Oid relid)
{
	char	   *queue = queue_of(relid);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	if (!queue_exists(queue))
		elog(ERROR, "the Citus queue of model \"%s\" is missing", model);
	args[0] = CStringGetTextDatum(model);
	if (SPI_execute_with_args(psprintf("DELETE FROM unlearn.%s WHERE model = $1 "
									   "RETURNING change, contribution", queue),
							  1, argtypes, args, NULL, false, 0) != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "could not read the queue of model \"%s\"", model);
}

/* a retrained model of hash-distributed relid reflects its table: drop its entries */
void
citus_clear_queue(const char *model, Oid relid)
{
	citus_take_queue(model, relid);
}

/* whether model has entries queued on hash-distributed relid */
bool
citus_queue_has_entries(const char *model, Oid relid)
{
	char	   *queue = queue_of(relid);
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];

	if (!queue_exists(queue))
		return false;
	args[0] = CStringGetTextDatum(model);
	if (SPI_execute_with_args(psprintf("SELECT 1 FROM unlearn.%s WHERE model = $1 LIMIT 1", queue),
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the queue of model \"%s\"", model);
	return SPI_processed > 0;
}

/* drop the queue of table (a qualified name, quoted), if there is one */
void
citus_drop_queue(const char *table)
{
	char	   *queue = citus_queue_name(table);

	if (queue_exists(queue) && citus_is_coordinator())
		run_citus_ddl(list_make1(psprintf("DROP TABLE unlearn.%s", queue)), table);
}
