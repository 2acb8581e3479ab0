/*-------------------------------------------------------------------------
 *
 * export.c
 *	  unlearn_export(model): what predicting needs, as jsonb, for use
 *	  outside the database: the released weights in mapped space, the row
 *	  map, the features, the classes and the loss.  The same checks as
 *	  reading the weights (load_predict_model): the owner or a 'read'
 *	  grant, a model that releases weights.  An exported copy does not
 *	  forget: the README says so.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"

PG_FUNCTION_INFO_V1(unlearn_export);

/* a double that reads back to itself, as JSON */
static void
append_number(StringInfo buf, double v)
{
	appendStringInfo(buf, "%.17g", v);
}

static void
append_numbers(StringInfo buf, const double *v, int n)
{
	int			i;

	appendStringInfoChar(buf, '[');
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(buf, ", ");
		append_number(buf, v[i]);
	}
	appendStringInfoChar(buf, ']');
}

static void
append_strings(StringInfo buf, char *const *v, int n)
{
	int			i;

	appendStringInfoChar(buf, '[');
	for (i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(buf, ", ");
		escape_json(buf, v[i]);
	}
	appendStringInfoChar(buf, ']');
}

Datum
unlearn_export(PG_FUNCTION_ARGS)
{
	PredictModel *pm = load_predict_model(text_to_cstring(PG_GETARG_TEXT_PP(0)), CurrentMemoryContext);
	UnlearnModel *m = pm->columns;
	int			ncol = pm->map.pooled ? 1 : pm->dims;
	StringInfoData buf;
	int			k;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "{\"format\": \"unlearn.export\", \"version\": ");
	escape_json(&buf, UNLEARN_VERSION);
	appendStringInfoString(&buf, ", \"model\": ");
	escape_json(&buf, pm->name);
	appendStringInfo(&buf, ", \"loss\": \"%s\", \"label\": ",
					 pm->loss == LOSS_SQUARED ? "squared" : "logistic");
	escape_json(&buf, m->def.label);
	appendStringInfoString(&buf, ", \"features\": ");
	append_strings(&buf, m->def.features, m->def.nfeatures);
	appendStringInfoString(&buf, ", \"expressions\": [");
	for (k = 0; k < m->def.nfeatures; k++)
		appendStringInfo(&buf, "%s%s", k > 0 ? ", " : "",
						 feature_is_expression(m, k) ? "true" : "false");
	appendStringInfoString(&buf, "], \"filter\": ");
	if (m->def.filter != NULL)
		escape_json(&buf, m->def.filter);
	else
		appendStringInfoString(&buf, "null");
	appendStringInfo(&buf, ", \"feature_array\": %s, \"dims\": %d, \"classes\": ",
					 pm->map.pooled ? "true" : "false", pm->dims);
	if (pm->loss == LOSS_SQUARED)
		appendStringInfoString(&buf, "null");
	else
		append_strings(&buf, pm->classes, pm->nlabels);
	appendStringInfoString(&buf, ", \"map\": {\"centre\": ");
	if (pm->map.centre != NULL)
		append_numbers(&buf, pm->map.centre, ncol);
	else
		appendStringInfoString(&buf, "null");
	appendStringInfoString(&buf, ", \"spread\": ");
	if (pm->map.spread != NULL)
		append_numbers(&buf, pm->map.spread, ncol);
	else
		appendStringInfoString(&buf, "null");
	appendStringInfoString(&buf, ", \"clamp\": ");
	append_number(&buf, ROW_MAP_CLAMP);
	appendStringInfo(&buf, ", \"impute\": %s, \"intercept\": %s, \"intercept_scaling\": ",
					 pm->map.impute ? "true" : "false", pm->map.intercept ? "true" : "false");
	append_number(&buf, pm->map.intercept_scaling);
	appendStringInfoString(&buf, ", \"scale\": ");
	append_number(&buf, pm->map.scale);
	appendStringInfoString(&buf, "}, \"weights\": [");
	for (k = 0; k < pm->nclasses; k++)
	{
		if (k > 0)
			appendStringInfoString(&buf, ", ");
		append_numbers(&buf, pm->coef + (Size) k * pm->p, pm->p);
	}
	appendStringInfoString(&buf, "], \"predict\": ");
	escape_json(&buf,
				"z_j = clamp((x_j - centre_j) / spread_j, -clamp, clamp) (centre and spread: one per "
				"feature, or one for every element of an array feature; none: z = x); with impute, "
				"a missing x_j (null or not a finite number) gives z_j = 0; with the "
				"intercept, z gains a last coordinate intercept_scaling; x' = z / max(scale, ||z||); "
				"score_k = weights[k] . x'. squared: the value score_0. logistic, one weight vector: "
				"P(classes[1]) = 1 / (1 + exp(-score_0)). one-vs-rest: P(classes[k]) proportional to "
				"1 / (1 + exp(-score_k)), the class of the largest score predicted.");
	appendStringInfoChar(&buf, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data)));
}
