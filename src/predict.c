/*-------------------------------------------------------------------------
 *
 * predict.c
 *	  Prediction with a released model: per value, per row and per table.
 *
 * unlearn_predict and unlearn_predict_class read the model once per query
 * (cached in fn_extra), so scoring a table with them costs one catalog read
 * plus O(p K) per row.  unlearn_score does the same in one C loop over the
 * table.  Neither needs the model's secret state, so any role that can
 * read unlearn.models can predict.
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(unlearn_predict);
PG_FUNCTION_INFO_V1(unlearn_predict_class);
PG_FUNCTION_INFO_V1(unlearn_coef);
PG_FUNCTION_INFO_V1(unlearn_score);

/* what prediction needs, copied out of the SPI context */
typedef struct PredictModel
{
	char	   *name;
	UnlearnLoss loss;
	int			dims;
	int			p;
	int			nclasses;
	int			nlabels;
	RowMap		map;
	double	   *coef;
	char	  **classes;
	double	   *row;			/* scratch, p */
} PredictModel;

static PredictModel *
load_predict_model(const char *name, MemoryContext cxt)
{
	UnlearnModel *m;
	PredictModel *pm;
	MemoryContext old;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	m = catalog_load_model(name, false, false, false);
	if (m->status != MODEL_READY)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" releases no weights: its state is \"%s\"",
						m->name, model_status_name(m->status)),
				 m->status == MODEL_TOO_FEW_ROWS ?
				 errhint("Its table has fewer rows than the model has weights; inserting rows or unlearn_retrain('%s') brings it back.", m->name) :
				 errhint("Its removal budget ran out; unlearn_retrain('%s') brings it back.", m->name)));
	old = MemoryContextSwitchTo(cxt);
	pm = palloc0(sizeof(PredictModel));
	pm->name = pstrdup(name);
	pm->loss = m->loss;
	pm->dims = m->dims;
	pm->p = m->p;
	pm->nclasses = m->nclasses;
	pm->nlabels = m->nlabels;
	model_row_map(m, &pm->map);
	if (m->centre != NULL)
	{
		double	   *centre = palloc(sizeof(double) * map_columns(m));
		double	   *spread = palloc(sizeof(double) * map_columns(m));

		memcpy(centre, m->centre, sizeof(double) * map_columns(m));
		memcpy(spread, m->spread, sizeof(double) * map_columns(m));
		pm->map.centre = centre;
		pm->map.spread = spread;
	}
	pm->coef = palloc(sizeof(double) * m->nclasses * m->p);
	memcpy(pm->coef, m->coef, sizeof(double) * m->nclasses * m->p);
	pm->classes = palloc(sizeof(char *) * Max(m->nlabels, 1));
	for (i = 0; i < m->nlabels; i++)
		pm->classes[i] = pstrdup(m->classes[i]);
	pm->row = palloc(sizeof(double) * (m->p + 1));
	MemoryContextSwitchTo(old);
	SPI_finish();
	return pm;
}

static PredictModel *
cached_model(FunctionCallInfo fcinfo, text *name)
{
	PredictModel *pm = (PredictModel *) fcinfo->flinfo->fn_extra;
	char	   *s = text_to_cstring(name);

	if (pm == NULL || strcmp(pm->name, s) != 0)
	{
		pm = load_predict_model(s, fcinfo->flinfo->fn_mcxt);
		fcinfo->flinfo->fn_extra = pm;
	}
	pfree(s);
	return pm;
}

/*
 * Score the mapped row in pm->row: returns the probability of the positive
 * class (binary), the value (squared), or the top one-vs-rest probability
 * with its class in *best.
 */
static double
score_row(PredictModel *pm, int *best)
{
	int			k;
	double		top = -INFINITY;

	map_row(&pm->map, pm->row);
	if (pm->nclasses == 1)
	{
		double		z = vec_dot(pm->coef, pm->row, pm->p);

		if (pm->loss == LOSS_SQUARED)
		{
			*best = -1;
			return z;
		}
		*best = z >= 0 ? 1 : 0;
		return logistic_sigmoid(z);
	}
	*best = 0;
	for (k = 0; k < pm->nclasses; k++)
	{
		double		z = vec_dot(pm->coef + (Size) k * pm->p, pm->row, pm->p);

		if (z > top)
		{
			top = z;
			*best = k;
		}
	}
	return logistic_sigmoid(top);
}

static void
read_input_vector(PredictModel *pm, ArrayType *x)
{
	Oid			elemtype = ARR_ELEMTYPE(x);

	if (elemtype != FLOAT8OID)
		elog(ERROR, "unlearn_predict: expected a float8[] argument");
	extract_float_array(PointerGetDatum(x), pm->row, pm->dims, "feature array");
	check_feature_values(pm->row, pm->dims, pm->name);
}

Datum
unlearn_predict(PG_FUNCTION_ARGS)
{
	PredictModel *pm = cached_model(fcinfo, PG_GETARG_TEXT_PP(0));
	int			best;

	read_input_vector(pm, PG_GETARG_ARRAYTYPE_P(1));
	PG_RETURN_FLOAT8(score_row(pm, &best));
}

Datum
unlearn_predict_class(PG_FUNCTION_ARGS)
{
	PredictModel *pm = cached_model(fcinfo, PG_GETARG_TEXT_PP(0));
	int			best;

	if (pm->loss == LOSS_SQUARED)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a regression model", pm->name),
				 errhint("Use unlearn_predict() for its predicted value.")));
	read_input_vector(pm, PG_GETARG_ARRAYTYPE_P(1));
	score_row(pm, &best);
	PG_RETURN_TEXT_P(cstring_to_text(pm->classes[best]));
}

Datum
unlearn_coef(PG_FUNCTION_ARGS)
{
	PredictModel *pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)),
										  CurrentMemoryContext);

	PG_RETURN_DATUM(coef_array(pm->coef, pm->nclasses, pm->p));
}

/*
 * Point m's feature column types at those of another relation to score,
 * which must have every feature column with a supported type of the same
 * shape (scalar or array).
 */
static void
scoring_columns(UnlearnModel *m, Oid relid)
{
	int			i;

	for (i = 0; i < m->nfeatures; i++)
	{
		AttrNumber	attnum = get_attnum(relid, m->features[i]);
		Oid			t = attnum == InvalidAttrNumber || attnum < 0 ? InvalidOid : get_atttype(relid, attnum);
		bool		is_array;

		if (!OidIsValid(t))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							m->features[i], get_rel_name(relid)),
					 errhint("The scored table needs every feature column of model \"%s\".", m->name)));
		if (!feature_type_supported(t, &is_array) || is_array != m->feature_array)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation \"%s\" has type %s, which does not fit model \"%s\"",
							m->features[i], get_rel_name(relid), format_type_be(t), m->name)));
		m->column_types[i] = t;
	}
}

/*
 * unlearn_score(model, source): (row_id, label, score) for every row of a
 * table that has the model's feature columns, in one pass.
 */
Datum
unlearn_score(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	PredictModel *pm;
	UnlearnModel *m;
	Oid			relid;
	Portal		portal;
	char	   *query;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model must not be null")));
	InitMaterializedSRF(fcinfo, 0);
	pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	m = catalog_load_model(pm->name, false, false, false);
	relid = PG_ARGISNULL(1) ? m->source : PG_GETARG_OID(1);
	if (relid != m->source)
		scoring_columns(m, relid);
	query = build_feature_select(m, relation_qualified_name(relid), true);
	portal = SPI_cursor_open_with_args(NULL, query, 0, NULL, NULL, NULL, true, 0);
	for (;;)
	{
		uint64		i;

		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_processed == 0)
			break;
		for (i = 0; i < SPI_processed; i++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, false};
			bool		isnull;
			int			best;
			double		score;

			CHECK_FOR_INTERRUPTS();
			decode_spi_row(m, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, pm->row,
						   NULL, NULL);
			score = score_row(pm, &best);
			values[0] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
									  SPI_tuptable->tupdesc->natts, &isnull);
			if (best >= 0)
				values[1] = CStringGetTextDatum(pm->classes[best]);
			else
				nulls[1] = true;
			values[2] = Float8GetDatum(score);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	return (Datum) 0;
}
