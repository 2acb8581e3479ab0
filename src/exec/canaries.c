/*-------------------------------------------------------------------------
 *
 * canaries.c
 *	  The canaries of a membership audit (api/audit.c) enter and leave a
 *	  model's table through its ordinary INSERT and DELETE, as the caller,
 *	  so that every model of the table sees them as it sees any write.
 *
 * Both statements run with the caller's rights and row-level security,
 * with search_path = pg_catalog, pg_temp and every operator qualified.
 * The INSERT fills the model's label and feature columns; the table's
 * other columns take their defaults.  An error of either statement is
 * raised again without its detail, which may show a row's values.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/itemptr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "tcop/tcopprot.h"
#include "nodes/parsenodes.h"

/*
 * Raise the error being handled again as "prefix: its message", with its
 * SQLSTATE and hint, without its detail (which may show a row's values).
 * Called in a PG_CATCH block, in the context to copy the error into.
 */
static void
raise_again(const char *prefix, const char *hint)
{
	ErrorData  *edata = CopyErrorData();

	FlushErrorState();
	ereport(ERROR,
			(errcode(edata->sqlerrcode),
			 errmsg("%s: %s", prefix, edata->message),
			 errhint("%s", hint)));
}

static const char *
forget_hint(UnlearnModel *m)
{
	return psprintf("forget is a query whose rows are rows of the table, such as SELECT * FROM %s WHERE ...",
					relation_qualified_name(m->def.source));
}

typedef enum AuditWrite
{
	WRITE_INSERT,
	WRITE_DELETE,
	WRITE_FORGET
} AuditWrite;

/*
 * Run one of the audit's writes as the caller.  The canaries' statements
 * pin search_path = pg_catalog, pg_temp; forget's runs with the caller's,
 * since it embeds their query.  An error is raised again with its
 * SQLSTATE and message, without its detail (which may show a row), and
 * with a hint on what the write needs.
 */
static int
run_audit_write(UnlearnModel *m, AuditWrite write, const char *sql, int nargs, Oid *types,
				Datum *values)
{
	static const char *const what[] = {
		"insert the audit's canaries into", "delete the audit's canaries from",
		"delete the rows of forget from"
	};
	MemoryContext cxt = CurrentMemoryContext;
	int			level = NewGUCNestLevel();
	volatile int result = 0;
	const char *table = relation_qualified_name(m->def.source);
	const char *hint = write == WRITE_INSERT ?
		"The canaries fill the model's label and feature columns; every other column of the table needs a default (an identity column, say) or must accept NULL." :
		write == WRITE_DELETE ?
		"The caller's row-level security must let them delete the rows they inserted." :
		forget_hint(m);
	char	   *prefix = psprintf("could not %s table %s", what[write], table);

	if (write != WRITE_FORGET)
		(void) set_config_option("search_path", "pg_catalog, pg_temp",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		result = SPI_execute_with_args(sql, nargs, types, values, NULL, false, 0);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		raise_again(prefix, hint);
	}
	PG_END_TRY();
	AtEOXact_GUC(true, level);
	return result;
}

/* the cast of a canary value to column type t */
static const char *
cast_to(Oid type)
{
	return format_type_extended(type, -1, FORMAT_TYPE_FORCE_QUALIFY);
}

/*
 * INSERT count canaries into m's table: labels[i] (a class's canonical
 * text) and row i of x (count * dims raw feature values).  The new rows'
 * table and ctid go to oids and tids.
 */
void
canaries_insert(UnlearnModel *m, int count, char **labels, const double *x,
				Oid *oids, ItemPointerData *tids)
{
	StringInfoData sql;
	StringInfoData select;
	Datum	   *label_datums;
	Datum	   *value_datums;
	Datum		values[3];
	Oid			types[3] = {TEXTARRAYOID, FLOAT8ARRAYOID, INT4OID};
	int			dims[2];
	int			lbs[2] = {1, 1};
	int			d = m->def.dims;
	int			i,
				j;

	if (count == 0)
		return;
	initStringInfo(&sql);
	initStringInfo(&select);
	appendStringInfo(&sql, "INSERT INTO %s (%s",
					 relation_qualified_name(m->def.source), quote_identifier(m->def.label));
	appendStringInfo(&select, "SELECT ($1)[i]::%s", cast_to(m->def.column_types[m->def.nfeatures]));
	for (j = 0; j < m->def.nfeatures; j++)
	{
		appendStringInfo(&sql, ", %s", quote_identifier(m->def.features[j]));
		if (m->def.feature_array)
			appendStringInfo(&select,
							 ", (ARRAY(SELECT pg_catalog.unnest(($2)[i:i][1:%d])))::%s",
							 d, cast_to(m->def.column_types[j]));
		else
			appendStringInfo(&select, ", ($2)[i][%d]::%s", j + 1, cast_to(m->def.column_types[j]));
	}
	appendStringInfo(&sql, ") %s FROM pg_catalog.generate_series(1, $3) AS i RETURNING tableoid, ctid",
					 select.data);

	label_datums = palloc(sizeof(Datum) * count);
	value_datums = palloc(sizeof(Datum) * (Size) count * d);
	for (i = 0; i < count; i++)
		label_datums[i] = CStringGetTextDatum(labels[i]);
	for (i = 0; i < count * d; i++)
		value_datums[i] = Float8GetDatum(x[i]);
	dims[0] = count;
	dims[1] = d;
	values[0] = PointerGetDatum(construct_array(label_datums, count, TEXTOID, -1, false, TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_md_array(value_datums, NULL, 2, dims, lbs, FLOAT8OID,
												   sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[2] = Int32GetDatum(count);

	if (run_audit_write(m, WRITE_INSERT, sql.data, 3, types, values) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != (uint64) count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the audit's canaries did not all enter table %s",
						relation_qualified_name(m->def.source)),
				 errdetail("A rule or trigger of the table changed the INSERT."),
				 errhint("Audit a model whose table takes INSERTs as they are written.")));
	for (i = 0; i < count; i++)
	{
		bool		isnull;

		oids[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
		tids[i] = *(ItemPointer) DatumGetPointer(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));
	}
}

/*
 * DELETE the count rows (oids[i], tids[i]) from m's table: one statement
 * per partition they are in.  Returns the rows deleted.
 */
int64
canaries_delete(UnlearnModel *m, int count, const Oid *oids, const ItemPointerData *tids)
{
	bool	   *done = palloc0(sizeof(bool) * Max(count, 1));
	Datum	   *tid_datums = palloc(sizeof(Datum) * Max(count, 1));
	int64		deleted = 0;
	int			i;

	for (i = 0; i < count; i++)
	{
		int			n = 0,
					j;
		Datum		values[2];
		Oid			types[2] = {OIDOID, TIDARRAYOID};
		char	   *sql;

		if (done[i])
			continue;
		for (j = i; j < count; j++)
			if (!done[j] && oids[j] == oids[i])
			{
				tid_datums[n++] = PointerGetDatum(&tids[j]);
				done[j] = true;
			}
		values[0] = ObjectIdGetDatum(oids[i]);
		values[1] = PointerGetDatum(construct_array(tid_datums, n, TIDOID, sizeof(ItemPointerData),
													false, TYPALIGN_SHORT));
		sql = psprintf("DELETE FROM %s WHERE tableoid OPERATOR(pg_catalog.=) $1 "
					   "AND ctid OPERATOR(pg_catalog.=) ANY ($2)",
					   relation_qualified_name(m->def.source));
		if (run_audit_write(m, WRITE_DELETE, sql, 2, types, values) != SPI_OK_DELETE)
			elog(ERROR, "canary DELETE did not run");
		deleted += SPI_processed;
	}
	if (deleted != count)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the audit's canaries did not all leave table %s",
						relation_qualified_name(m->def.source)),
				 errdetail("A rule, trigger or policy of the table changed the DELETE."),
				 errhint("Audit a model whose table takes DELETEs as they are written.")));
	return deleted;
}

/*
 * DELETE the rows of m's table that the caller's query forget returns,
 * except the nkeep rows (keep_oids, keep_tids) of canaries the model holds
 * (a query over the table whose rows are rows of it, such as
 * SELECT * FROM t WHERE ...), as the caller, with the caller's
 * search_path: the query is theirs.  The deleted rows that are inside the
 * model come back as raw features (dims each, in *raw) and canonical
 * labels; rows with a null in a model column are left out.  Returns how
 * many came back.
 */
int
canaries_forget(UnlearnModel *m, const char *forget, int nkeep, const Oid *keep_oids,
				const ItemPointerData *keep_tids, double **raw, char ***labels)
{
	StringInfoData sql;
	int			d = m->def.dims;
	int			j,
				n,
				result;
	uint64		i;
	MemoryContext cxt = CurrentMemoryContext;
	const char *hint = forget_hint(m);
	List	   *volatile parsed = NIL;
	Datum	   *oid_datums = palloc(sizeof(Datum) * Max(nkeep, 1));
	Datum	   *tid_datums = palloc(sizeof(Datum) * Max(nkeep, 1));
	Datum		values[2];
	Oid			types[2] = {OIDARRAYOID, TIDARRAYOID};

	PG_TRY();
	{
		parsed = pg_parse_query(forget);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		raise_again("forget is not a query", hint);
	}
	PG_END_TRY();
	if (list_length(parsed) != 1 ||
		!IsA(((RawStmt *) linitial(parsed))->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("forget must be one SELECT"),
				 errhint("%s", hint)));

	/* the canaries the model holds stay, whatever forget says */
	for (j = 0; j < nkeep; j++)
	{
		oid_datums[j] = ObjectIdGetDatum(keep_oids[j]);
		tid_datums[j] = PointerGetDatum(&keep_tids[j]);
	}
	values[0] = PointerGetDatum(construct_array(oid_datums, nkeep, OIDOID, sizeof(Oid), true,
												TYPALIGN_INT));
	values[1] = PointerGetDatum(construct_array(tid_datums, nkeep, TIDOID, sizeof(ItemPointerData),
												false, TYPALIGN_SHORT));
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s AS _t WHERE EXISTS (SELECT 1 FROM (%s\n) AS _f "
					 "WHERE _f.* OPERATOR(pg_catalog.*=) _t.*) AND NOT EXISTS "
					 "(SELECT 1 FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS _k(o, c) "
					 "WHERE _k.o OPERATOR(pg_catalog.=) _t.tableoid AND _k.c OPERATOR(pg_catalog.=) _t.ctid) "
					 "RETURNING _t.%s",
					 relation_qualified_name(m->def.source), forget, quote_identifier(m->def.label));
	for (j = 0; j < m->def.nfeatures; j++)
		appendStringInfo(&sql, ", _t.%s", quote_identifier(m->def.features[j]));
	result = run_audit_write(m, WRITE_FORGET, sql.data, 2, types, values);
	if (result != SPI_OK_DELETE_RETURNING)
		elog(ERROR, "forget DELETE did not run");
	/* the columns as stored, decoded as every read of the model decodes them */
	check_feature_select_types(m, SPI_tuptable->tupdesc, true, NULL, 0);
	*raw = palloc(sizeof(double) * Max(SPI_processed, 1) * d);
	*labels = palloc(sizeof(char *) * Max(SPI_processed, 1));
	n = 0;
	for (i = 0; i < SPI_processed; i++)
	{
		double		value;

		if (decode_spi_row(m, SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
						   *raw + (Size) n * d, &(*labels)[n], &value))
			n++;
	}
	return n;
}
