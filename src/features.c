/*-------------------------------------------------------------------------
 *
 * features.c
 *	  From table rows to model rows: column resolution, value checks and
 *	  the one row map used at training, removal, addition and prediction.
 *
 * The row map.  With z = (x, 1) when the model has an intercept (else
 * z = x), and s = max ||z_i|| over the rows at (re)training,
 *
 *	 map(x) = z / max(s, ||z||).
 *
 * Training rows land inside the unit ball, as every bound requires
 * (certified-removal.md §1); a later row larger than the training rows is
 * projected onto the unit sphere instead of leaving it.
 *
 *-------------------------------------------------------------------------
 */
#include "unlearn.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

void
map_row(double *row, int d, bool intercept, double scale)
{
	double		norm;
	double		divisor;
	int			p = d + (intercept ? 1 : 0);
	int			j;

	if (intercept)
		row[d] = 1.0;
	norm = vec_norm(row, p);
	divisor = Max(scale, norm);
	if (divisor > 0)
		for (j = 0; j < p; j++)
			row[j] /= divisor;
}

double
row_norm_with_intercept(const double *raw, int d, bool intercept)
{
	double		s = intercept ? 1.0 : 0.0;
	int			j;

	for (j = 0; j < d; j++)
		s += raw[j] * raw[j];
	return sqrt(s);
}

void
check_feature_values(const double *raw, int d, const char *model)
{
	int			j;

	for (j = 0; j < d; j++)
	{
		if (isnan(raw[j]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("NaN not allowed in features of model \"%s\"", model),
					 errdetail("Feature %d is NaN.", j + 1),
					 errhint("Remove or fix the row, or filter it out with a view.")));
		if (isinf(raw[j]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("infinite value not allowed in features of model \"%s\"", model),
					 errdetail("Feature %d is infinite.", j + 1),
					 errhint("Remove or fix the row, or filter it out with a view.")));
	}
}

/*
 * Copy a 1-D numeric array into out[expected]; expected < 0 accepts any
 * length.  Returns the length.
 */
int
extract_float_array(Datum arr, Oid elemtype, double *out, int expected, const char *what)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	int			n;
	int			j;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s must be a one-dimensional array", what)));
	if (array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not contain nulls", what),
				 errhint("Replace missing values before training or predicting.")));
	n = ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
	if (expected >= 0 && n != expected)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("expected %d features, not %d", expected, n),
				 errhint("Every row must have as many features as the model was trained with.")));
	if (out == NULL)
		return n;
	if (ARR_ELEMTYPE(a) == FLOAT8OID)
		memcpy(out, ARR_DATA_PTR(a), sizeof(double) * n);
	else if (ARR_ELEMTYPE(a) == FLOAT4OID)
	{
		float4	   *src = (float4 *) ARR_DATA_PTR(a);

		for (j = 0; j < n; j++)
			out[j] = src[j];
	}
	else
		elog(ERROR, "%s: unexpected array element type %u", what, ARR_ELEMTYPE(a));
	/* a detoasted copy would otherwise live as long as the whole load */
	if ((Pointer) a != DatumGetPointer(arr))
		pfree(a);
	return n;
}

static bool
is_numeric_type(Oid t)
{
	switch (t)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case BOOLOID:
			return true;
		default:
			return false;
	}
}

static bool
is_numeric_array_type(Oid t)
{
	switch (t)
	{
		case INT2ARRAYOID:
		case INT4ARRAYOID:
		case INT8ARRAYOID:
		case FLOAT4ARRAYOID:
		case FLOAT8ARRAYOID:
		case NUMERICARRAYOID:
			return true;
		default:
			return false;
	}
}

static Oid
column_type_or_error(Oid relid, const char *column)
{
	AttrNumber	attnum = get_attnum(relid, column);

	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, get_rel_name(relid))));
	return get_atttype(relid, attnum);
}

/*
 * Resolve label and feature columns of a new model: checks that they exist
 * and have usable types, and records their types.
 */
void
resolve_features(UnlearnModel *m, Oid relid, ArrayType *features, const char *label)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	Oid			ltype;

	if (ARR_NDIM(features) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("features must be a one-dimensional array of column names")));
	deconstruct_array(features, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("features must name at least one column"),
				 errhint("Pass a list of numeric columns, or one float8[] or real[] column.")));

	m->nfeatures = n;
	m->features = palloc(sizeof(char *) * n);
	m->column_types = palloc(sizeof(Oid) * (n + 1));
	for (i = 0; i < n; i++)
	{
		Oid			t;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("feature column names must not be null")));
		m->features[i] = TextDatumGetCString(elems[i]);
		if (strcmp(m->features[i], label) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("label column \"%s\" cannot also be a feature", label)));
		t = column_type_or_error(relid, m->features[i]);
		m->column_types[i] = t;
		if (n == 1 && is_numeric_array_type(t))
			m->feature_array = true;
		else if (!is_numeric_type(t))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("feature column \"%s\" has type %s, which is not numeric",
							m->features[i], format_type_be(t)),
					 errhint("Features are numeric columns, or a single float8[] or real[] column.")));
	}
	if (!m->feature_array)
		m->dims = n;

	ltype = column_type_or_error(relid, label);
	m->column_types[n] = ltype;
	if (m->loss == LOSS_SQUARED && (!is_numeric_type(ltype) || ltype == BOOLOID))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("label column \"%s\" has type %s, but squared loss needs a numeric label",
						label, format_type_be(ltype))));
}

/*
 * Check that the model's columns are still there with the types it was
 * trained on.  Errors name the model and the column.
 */
void
verify_source_columns(UnlearnModel *m)
{
	int			i;

	for (i = 0; i <= m->nfeatures; i++)
	{
		const char *col = i < m->nfeatures ? m->features[i] : m->label;
		AttrNumber	attnum = get_attnum(m->source, col);

		if (attnum == InvalidAttrNumber || get_atttype(m->source, attnum) != m->column_types[i])
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("model \"%s\" depends on column \"%s\" of table \"%s\" with type %s",
							m->name, col, get_rel_name(m->source),
							format_type_be(m->column_types[i])),
					 errhint("Drop the model with unlearn_drop('%s') first, then retrain it on the new table.",
							 m->name)));
	}
}

/*
 * SELECT list of a model's rows: label as text, then the features as
 * float8 columns or one float8[] column.
 */
char *
build_feature_select(UnlearnModel *m, const char *relation, bool with_ctid)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	/* scoring reads tables that may lack the label column */
	if (with_ctid)
		appendStringInfoString(&buf, "SELECT NULL::text");
	else
		appendStringInfo(&buf, "SELECT (%s)::text", quote_identifier(m->label));
	if (m->feature_array)
		appendStringInfo(&buf, ", (%s)::float8[]", quote_identifier(m->features[0]));
	else
		for (i = 0; i < m->nfeatures; i++)
		{
			if (m->column_types[i] == BOOLOID)
				appendStringInfo(&buf, ", (%s)::int::float8", quote_identifier(m->features[i]));
			else
				appendStringInfo(&buf, ", (%s)::float8", quote_identifier(m->features[i]));
		}
	if (with_ctid)
		appendStringInfoString(&buf, ", ctid");
	appendStringInfo(&buf, " FROM %s", relation);
	return buf.data;
}

/*
 * Read one SPI tuple laid out by build_feature_select into raw[d] and the
 * label text (skipped when labeltext is NULL).
 */
bool
fetch_row_from_tuple(UnlearnModel *m, HeapTuple tuple, TupleDesc desc,
					 double *raw, char **labeltext, bool *label_null)
{
	bool		isnull;
	Datum		v;
	int			j;

	if (labeltext != NULL)
	{
		v = SPI_getbinval(tuple, desc, 1, &isnull);
		*label_null = isnull;
		*labeltext = isnull ? NULL : TextDatumGetCString(v);
	}

	if (m->feature_array)
	{
		v = SPI_getbinval(tuple, desc, 2, &isnull);
		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("feature column \"%s\" is null in a row of model \"%s\"",
							m->features[0], m->name),
					 errhint("Remove the row or fill in its features.")));
		extract_float_array(v, FLOAT8OID, raw, m->dims, "feature array");
	}
	else
	{
		for (j = 0; j < m->nfeatures; j++)
		{
			v = SPI_getbinval(tuple, desc, j + 2, &isnull);
			if (isnull)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("feature column \"%s\" is null in a row of model \"%s\"",
								m->features[j], m->name),
						 errhint("Remove the row or fill in its features.")));
			raw[j] = DatumGetFloat8(v);
		}
	}
	check_feature_values(raw, m->dims, m->name);
	return true;
}
