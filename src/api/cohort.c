/*-------------------------------------------------------------------------
 *
 * cohort.c
 *	  unlearn_forget_cohort(model, cohort): erase a cohort by deleting its
 *	  rows from the model's table with the caller's rights.  The table's
 *	  triggers then bring every model of the table to the rows left; a
 *	  model that keeps the cohort's statistics forgets them in one step
 *	  (exec/cohorts.c).
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(unlearn_forget_cohort);

Datum
unlearn_forget_cohort(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Datum		value = PG_GETARG_DATUM(1);
	Oid			source = check_caller_on_model(name, MODEL_FIGURES);
	UnlearnModel *m;
	ExtensionContext ctx;
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	char	   *sql;
	Oid			base;
	AttrNumber	attnum;
	int			ret;
	int64		deleted;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = catalog_load_model(name, false, false, false);
	leave_extension_context(&ctx);
	if (m->def.source != source)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("model \"%s\" changed while its cohort was being erased", name),
				 errhint("Retry the statement.")));
	if (m->def.cohort == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has no cohort column", name),
				 errhint("Train it with unlearn_train(..., cohort => 'column'), or delete the rows with DELETE.")));
	attnum = get_attnum(source, m->def.cohort);
	base = attnum > 0 ? getBaseType(get_atttype(source, attnum)) : InvalidOid;
	if (!cohort_type_supported(base))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cohort column \"%s\" of model \"%s\" is gone or changed type", m->def.cohort, name)));

	/*
	 * The caller's DELETE, with the caller's rights and row-level
	 * security; the value is read by its base type's built-in input
	 * function and compared by the built-in equality, byte for byte as
	 * cohort keys are (collation "C").
	 */
	sql = psprintf("DELETE FROM %s WHERE %s%s OPERATOR(pg_catalog.=) $1::%s",
				   relation_qualified_name(source), quote_identifier(m->def.cohort),
				   cohort_collation(base), format_type_be_qualified(base));
	args[0] = value;
	ret = SPI_execute_with_args(sql, 1, types, args, NULL, false, 0);
	if (ret != SPI_OK_DELETE)
		elog(ERROR, "could not delete the rows of a cohort of model \"%s\": %d", name, ret);
	deleted = (int64) SPI_processed;
	SPI_finish();
	PG_RETURN_INT64(deleted);
}
