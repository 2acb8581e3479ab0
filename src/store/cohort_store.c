/*-------------------------------------------------------------------------
 *
 * cohort_store.c
 *	  unlearn.cohorts: the statistics of each cohort of a model trained
 *	  with a cohort column (mechanism/cohort.c), one row per cohort.
 *
 * Invariants:
 *	- A model has rows here only while it is ready, is a Newton model
 *	  (newton or exact) and has a cohort column.  Each row's statistics
 *	  describe exactly the rows of its cohort value that the model
 *	  reflects, at the model's current anchor (exec/cohorts.c rebuilds
 *	  them all whenever the anchor moves, and a change of rows updates
 *	  the cohorts it touches in the same transaction).
 *	- A cohort value with no row here is in no cohort's statistics: its
 *	  rows are forgotten row by row.  A value is given a row only when all
 *	  the statistics are rebuilt, so a row never covers part of a value's
 *	  rows.
 *	- Erasing a cohort deletes its row: its value stays in no catalog
 *	  table (the ledger records the operation and its row count only).
 *	- Only the model's owner's roles (and superusers) read a row
 *	  (unlearn.sql's policy); only the extension writes one.  A stored row
 *	  is checked before use, and one that fails its checks is deleted
 *	  instead of used, so that its cohort's rows go row by row.
 *
 *-------------------------------------------------------------------------
 */
#include "store/store.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

static Datum
stats_bytea(const UnlearnModel *m, const CohortStats *cs)
{
	Size		n = cohort_doubles(m) * sizeof(double);
	bytea	   *b = (bytea *) palloc(VARHDRSZ + n);

	SET_VARSIZE(b, VARHDRSZ + n);
	memcpy(VARDATA(b), cs->buffer, n);
	return PointerGetDatum(b);
}

/* a fresh, empty cohort of m */
CohortStats *
cohort_new(const UnlearnModel *m, const char *key)
{
	CohortStats *cs = palloc0(sizeof(CohortStats));

	cs->key = pstrdup(key);
	cs->buffer = MemoryContextAllocHuge(CurrentMemoryContext, cohort_doubles(m) * sizeof(double));
	memset(cs->buffer, 0, cohort_doubles(m) * sizeof(double));
	cs->fresh = true;
	return cs;
}

/*
 * The stored cohorts of m among keys[0..n-1]: a List of CohortStats.  A
 * stored row that fails its checks is marked erased (cohort_store_write
 * deletes it) and left out.
 */
List *
cohort_store_load(UnlearnModel *m, char **keys, int n)
{
	Oid			types[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	Size		bytes = cohort_doubles(m) * sizeof(double);
	List	   *out = NIL;
	uint64		r;
	int			ret;

	args[0] = CStringGetTextDatum(m->def.name);
	args[1] = cstring_text_array(keys, n);
	ret = SPI_execute_with_args("SELECT cohort, rows, stats FROM unlearn.cohorts "
								"WHERE model = $1 AND cohort = ANY ($2)",
								2, types, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read the cohorts of model \"%s\": %d", m->def.name, ret);
	for (r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *key = TextDatumGetCString(SPI_getbinval(tuple, desc, 1, &isnull));
		int64		rows = DatumGetInt64(SPI_getbinval(tuple, desc, 2, &isnull));
		bytea	   *b = DatumGetByteaPP(SPI_getbinval(tuple, desc, 3, &isnull));
		CohortStats *cs = cohort_new(m, key);

		cs->fresh = false;
		cs->rows = rows;
		if (VARSIZE_ANY_EXHDR(b) == bytes)
			memcpy(cs->buffer, VARDATA_ANY(b), bytes);
		if (VARSIZE_ANY_EXHDR(b) != bytes || !cohort_stats_plausible(m, cs))
		{
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the statistics of a cohort of model \"%s\" fail their checks", m->def.name),
					 errdetail("The cohort's rows are forgotten row by row until the model is retrained.")));
			cs->erased = true;
		}
		out = lappend(out, cs);
	}
	return out;
}

/*
 * The rows of the stored cohorts of m among keys[0..n-1], without their
 * statistics: keys[i] -> rows[i], 0 for a cohort not kept.
 */
void
cohort_store_rows(UnlearnModel *m, char **keys, int64 *rows, int n)
{
	Oid			types[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	uint64		r;
	int			i;

	args[0] = CStringGetTextDatum(m->def.name);
	args[1] = cstring_text_array(keys, n);
	if (SPI_execute_with_args("SELECT cohort, rows FROM unlearn.cohorts WHERE model = $1 AND cohort = ANY ($2)",
							  2, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the cohorts of model \"%s\"", m->def.name);
	memset(rows, 0, sizeof(int64) * n);
	for (r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		char	   *key = TextDatumGetCString(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 1, &isnull));
		int64		count = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull));

		for (i = 0; i < n; i++)
			if (strcmp(keys[i], key) == 0)
				rows[i] = count;
	}
}

/* write what changed in cohorts (a List of CohortStats) */
void
cohort_store_write(UnlearnModel *m, List *cohorts)
{
	Oid			types[5] = {TEXTOID, OIDOID, TEXTOID, INT8OID, BYTEAOID};
	Datum		v[5];
	ListCell   *lc;
	int			ret;

	v[0] = CStringGetTextDatum(m->def.name);
	v[1] = ObjectIdGetDatum(m->def.owner);
	foreach(lc, cohorts)
	{
		CohortStats *cs = (CohortStats *) lfirst(lc);

		v[2] = CStringGetTextDatum(cs->key);
		if (cs->erased || (cs->rows <= 0 && !cs->fresh))
		{
			if (cs->fresh)
				continue;
			ret = SPI_execute_with_args("DELETE FROM unlearn.cohorts WHERE model = $1 AND cohort = $3",
										3, types, v, NULL, false, 0);
			if (ret != SPI_OK_DELETE)
				elog(ERROR, "could not delete a cohort of model \"%s\": %d", m->def.name, ret);
			continue;
		}
		if (!cs->changed && !cs->fresh)
			continue;
		if (cs->rows <= 0)
			continue;
		v[3] = Int64GetDatum(cs->rows);
		v[4] = stats_bytea(m, cs);
		ret = SPI_execute_with_args(cs->fresh ?
									"INSERT INTO unlearn.cohorts (model, owner, cohort, rows, stats) "
									"VALUES ($1, $2, $3, $4, $5)" :
									"UPDATE unlearn.cohorts SET rows = $4, stats = $5 "
									"WHERE model = $1 AND cohort = $3",
									5, types, v, NULL, false, 0);
		if (ret != (cs->fresh ? SPI_OK_INSERT : SPI_OK_UPDATE) || SPI_processed != 1)
			elog(ERROR, "could not write a cohort of model \"%s\": %d", m->def.name, ret);
		cs->fresh = cs->changed = false;
		pfree(DatumGetPointer(v[4]));
	}
}

/* delete every cohort of model name */
void
cohort_store_clear(const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		v[1];

	v[0] = CStringGetTextDatum(name);
	if (SPI_execute_with_args("DELETE FROM unlearn.cohorts WHERE model = $1",
							  1, types, v, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete the cohorts of model \"%s\"", name);
}
