/*-------------------------------------------------------------------------
 *
 * rows.c
 *	  Reading a model's columns from table rows in binary.
 *
 * Every value is decoded here, from its Datum, by a closed list of
 * built-in types (and domains over them): no cast, operator or type
 * output function runs, so no code that a non-superuser can define runs
 * while the extension reads rows as its owner (privilege.c), and nothing
 * depends on the session's DateStyle, TimeZone, extra_float_digits or
 * collation.
 *
 *	features: smallint, integer, bigint, real, double precision, numeric,
 *			  boolean (0 or 1); or one array column of the numeric ones
 *	labels:   boolean, smallint, integer, bigint, real, double precision,
 *			  numeric, text, varchar, char(n); squared loss: the numeric ones
 *
 * A label's canonical text (what unlearn.models.classes holds) is the
 * same in every session: integers in decimal, floats in their shortest
 * exact decimal (as float8out with extra_float_digits > 0), numerics
 * without trailing zeros, char(n) without its padding.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"

/* smallint, integer, bigint, real, double precision or numeric */
bool
is_numeric_scalar(Oid base)
{
	switch (base)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			return true;
		default:
			return false;
	}
}

/*
 * A scalar feature's type: a number, a boolean, or a date or timestamp
 * (read as days or seconds since 1970-01-01, whatever the session's
 * settings: numeric_datum_to_double)
 */
bool
is_feature_scalar(Oid base)
{
	return is_numeric_scalar(base) || base == BOOLOID || base == DATEOID ||
		base == TIMESTAMPOID || base == TIMESTAMPTZOID;
}

bool
feature_type_supported(Oid type, bool *is_array)
{
	Oid			base = getBaseType(type);
	Oid			elem = get_element_type(base);

	*is_array = OidIsValid(elem);
	if (*is_array)
		return is_numeric_scalar(elem);
	return is_feature_scalar(base);
}

/* whether a feature column of type type fits m: supported, and of m's shape */
bool
feature_type_fits(UnlearnModel *m, Oid type)
{
	bool		is_array;

	return feature_type_supported(type, &is_array) && is_array == m->def.feature_array;
}

bool
label_type_supported(Oid type, UnlearnLoss loss)
{
	Oid			base = getBaseType(type);

	if (is_numeric_scalar(base))
		return true;
	if (loss == LOSS_SQUARED)
		return false;
	return base == BOOLOID || base == TEXTOID || base == VARCHAROID || base == BPCHAROID;
}

/* one numeric value of a built-in type as a double */
double
numeric_datum_to_double(Oid base, Datum d)
{
	switch (base)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		case INT8OID:
			return (double) DatumGetInt64(d);
		case FLOAT4OID:
			return DatumGetFloat4(d);
		case FLOAT8OID:
			return DatumGetFloat8(d);
		case NUMERICOID:
			/* out of range becomes +-Inf or 0, never an error quoting the value */
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
		case BOOLOID:
			return DatumGetBool(d) ? 1.0 : 0.0;
		case DATEOID:
			/* days since 1970-01-01; infinity is outside every range */
			if (DATE_NOT_FINITE(DatumGetDateADT(d)))
				return DATE_IS_NOBEGIN(DatumGetDateADT(d)) ? -HUGE_VAL : HUGE_VAL;
			return (double) DatumGetDateADT(d) + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			/* seconds since 1970-01-01 00:00 (UTC for timestamptz) */
			if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)))
				return TIMESTAMP_IS_NOBEGIN(DatumGetTimestamp(d)) ? -HUGE_VAL : HUGE_VAL;
			return (double) DatumGetTimestamp(d) / USECS_PER_SEC +
				(double) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;
	}
	elog(ERROR, "unsupported column type %u", base);
	return 0.0;					/* keep compiler quiet */
}

/*
 * The label's canonical text and, for numeric types, its value (NaN
 * otherwise; sort key of the classes and the target of squared loss).
 */
char *
label_from_datum(Oid type, Datum d, double *value)
{
	return label_from_base_datum(getBaseType(type), d, value);
}

/* label_from_datum of a label whose base type is known (no catalog look-up) */
char *
label_from_base_datum(Oid base, Datum d, double *value)
{
	char		buf[DOUBLE_SHORTEST_DECIMAL_LEN];

	*value = NAN;
	switch (base)
	{
		case BOOLOID:
			*value = DatumGetBool(d) ? 1.0 : 0.0;
			return pstrdup(DatumGetBool(d) ? "true" : "false");
		case INT2OID:
		case INT4OID:
		case INT8OID:
			{
				int64		v = base == INT2OID ? DatumGetInt16(d) :
					base == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);

				*value = (double) v;
				return psprintf(INT64_FORMAT, v);
			}
		case FLOAT4OID:
			*value = DatumGetFloat4(d);
			if (*value == 0.0)
				*value = 0.0;	/* -0 is 0 */
			float_to_shortest_decimal_buf((float) *value, buf);
			return pstrdup(buf);
		case FLOAT8OID:
			*value = DatumGetFloat8(d);
			if (*value == 0.0)
				*value = 0.0;
			double_to_shortest_decimal_buf(*value, buf);
			return pstrdup(buf);
		case NUMERICOID:
			*value = numeric_datum_to_double(NUMERICOID, d);
			return numeric_normalize(DatumGetNumeric(d));
		case TEXTOID:
		case VARCHAROID:
			return TextDatumGetCString(d);
		case BPCHAROID:
			{
				char	   *s = TextDatumGetCString(d);
				int			len = strlen(s);

				while (len > 0 && s[len - 1] == ' ')
					s[--len] = '\0';
				return s;
			}
	}
	elog(ERROR, "unsupported label type %u", base);
	return NULL;				/* keep compiler quiet */
}

/*
 * The canonical text (and value) of a label given as text for a label
 * column of type type, as a row holding it would have: a declared class.
 * The text is read by the base type's own input function (a built-in
 * one: label_type_supported), so a domain's checks, which may call a
 * role's functions, do not run.
 */
char *
label_from_text(Oid type, const char *text, double *value)
{
	Oid			base = getBaseType(type);
	Oid			input;
	Oid			ioparam;

	getTypeInputInfo(base, &input, &ioparam);
	return label_from_datum(base, OidInputFunctionCall(input, (char *) text, ioparam, -1), value);
}

/*
 * Is label (of value value) one the model takes?  A row whose label is
 * none of a model's declared classes, or a least-squares label beyond
 * UNLEARN_MAX_LABEL in magnitude (or not a number), is outside the model,
 * as a row with a null is under "nulls": "skip": nothing refuses it, so
 * no statement, a DELETE's cascade or a retrain included, fails for it.
 */
bool
model_takes_label(UnlearnModel *m, const char *label, double value)
{
	if (m->def.loss == LOSS_SQUARED)
		return fabs(value) <= UNLEARN_MAX_LABEL;
	return !m->def.classes_declared ||
		class_position(m->released.classes, m->released.nlabels, label) >= 0;
}

/*
 * Append to a row filter (SQL, as the table's owner) " AND" the label
 * being one of the declared classes, given as query parameter $param
 * (text[], cstring_text_array(m->released.classes,
 * m->released.nlabels)), compared as values of the label's base type
 * (text bytewise, as class_position does), so that counting rows in SQL
 * agrees with model_takes_label.
 */
void
append_declared_label_condition(UnlearnModel *m, StringInfo cond, int param)
{
	Oid			base = getBaseType(m->def.column_types[m->def.nfeatures]);
	bool		is_text = base == TEXTOID || base == VARCHAROID || base == BPCHAROID;
	const char *type = is_text ? "text" : format_type_be(base);

	appendStringInfo(cond, " AND (%s)::%s%s = ANY ($%d::%s[])",
					 quote_identifier(m->def.label), type, is_text ? " COLLATE \"C\"" : "", param, type);
}

/*
 * "the one-dimensional array col has a null element", false for an array
 * of another shape (array_position refuses those, and rows outside the
 * model may have them)
 */
char *
model_null_element_condition(const char *col)
{
	return psprintf("CASE WHEN pg_catalog.array_ndims(%s) = 1 THEN pg_catalog.array_position(%s, NULL) IS NOT NULL ELSE false END",
					col, col);
}

/*
 * Whether a one-dimensional array of a numeric type has an element that is
 * not a finite number as the model reads it (numeric_datum_to_double):
 * such a row is outside a model that skips them, before its length is
 * checked, as a row with a null element is.  Other shapes are errors where
 * the model decodes them.
 */
bool
array_has_nonfinite_element(Datum arr)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	Oid			elem = ARR_ELEMTYPE(a);
	Datum	   *elems;
	bool	   *nulls;
	int16		len;
	bool		byval;
	char		align;
	int			n,
				i;

	if (ARR_NDIM(a) != 1 || !is_numeric_scalar(elem))
		return false;
	/* the common case, as extract_float_array reads it: the doubles in place */
	if (elem == FLOAT8OID && !ARR_HASNULL(a))
		return !feature_values_finite((const double *) ARR_DATA_PTR(a), ARR_DIMS(a)[0]);
	/* an integer is finite, and a null element is not counted */
	if (elem == INT2OID || elem == INT4OID || elem == INT8OID)
		return false;
	get_typlenbyvalalign(elem, &len, &byval, &align);
	deconstruct_array(a, elem, len, byval, align, &elems, &nulls, &n);
	for (i = 0; i < n; i++)
		if (!nulls[i] && !isfinite(numeric_datum_to_double(elem, elems[i])))
			return true;
	return false;
}

/*
 * Whether "nulls": "skip" also leaves out a row with a feature that is not
 * a finite number (0.20.0 on: the SQL condition below needs
 * unlearn._finite); asked once per model.
 */
bool
model_skips_nonfinite(UnlearnModel *m)
{
	if (m->def.nulls != NULLS_SKIP)
		return false;
	if (m->call.finite_check == 0)
		m->call.finite_check = catalog_has_finite_check() ? 1 : -1;
	return m->call.finite_check > 0;
}

/*
 * The SQL condition "every feature of the row is a finite number" as
 * decode_model_row reads it (unlearn._finite, at most FEATURES_PER_CALL
 * arguments per call), or NULL when the model does not leave such rows
 * out
 */
char *
model_finite_condition(UnlearnModel *m)
{
	StringInfoData buf;
	int			j,
				n = 0;

	if (!model_skips_nonfinite(m))
		return NULL;
	initStringInfo(&buf);
	for (j = 0; j < m->def.nfeatures; j++)
	{
		/* a category() feature is 0 or 1 */
		if (feature_in_category_group(m, j))
			continue;
		appendStringInfo(&buf, "%s%s", n == 0 ? "unlearn._finite(" :
						 n % FEATURES_PER_CALL == 0 ? ") AND unlearn._finite(" : ", ",
						 feature_sql(m, j));
		n++;
	}
	if (n == 0)
		return pstrdup("true");
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * The SQL condition "a model column of the row is null" (the label,
 * with_label), or under "nulls": "skip" a feature is not a finite number
 * (model_finite_condition; not once a census under this call's lock found
 * none): the rows "nulls": "skip" leaves out
 */
char *
model_null_condition(UnlearnModel *m, bool with_label)
{
	char	   *missing = model_missing_condition(m, with_label);

	if (m->call.no_nonfinite_rows || model_finite_condition(m) == NULL)
		return missing;
	return psprintf("%s OR NOT (%s)", missing, model_finite_condition(m));
}

/* the SQL condition "a model column of the row is null" (the label, with_label) */
char *
model_missing_condition(UnlearnModel *m, bool with_label)
{
	StringInfoData buf;
	int			j;

	initStringInfo(&buf);
	if (with_label)
		appendStringInfo(&buf, "%s IS NULL", quote_identifier(m->def.label));
	for (j = 0; j < m->def.nfeatures; j++)
	{
		const char *col = feature_sql(m, j);

		/* a category() feature is never null */
		if (feature_in_category_group(m, j))
			continue;
		appendStringInfo(&buf, "%s%s IS NULL", buf.len > 0 ? " OR " : "", col);
		if (m->def.feature_array)
			appendStringInfo(&buf, " OR %s", model_null_element_condition(col));
	}
	if (buf.len == 0)
		appendStringInfoString(&buf, "false");
	return buf.data;
}

/*
 * The SQL condition "a least-squares label is within UNLEARN_MAX_LABEL",
 * compared in the label's own type, as model_takes_label compares its
 * value (NaN is above every number in SQL, so it is outside).  Two
 * comparisons rather than abs(), which raises for the smallest integer of
 * each integer type: no row may make the condition fail.
 */
char *
squared_label_condition(UnlearnModel *m)
{
	const char *label = quote_identifier(m->def.label);

	return psprintf("(%s OPERATOR(pg_catalog.>=) (-%s) AND %s OPERATOR(pg_catalog.<=) %s)",
					label, CppAsString2(UNLEARN_MAX_LABEL), label, CppAsString2(UNLEARN_MAX_LABEL));
}

/*
 * Append the SQL condition "the row is in the model": it has a label,
 * under "nulls": "skip" no null in a model column, with declared
 * classes a label among them (query parameter $param, see
 * append_declared_label_condition), and it passes the row filter, unless
 * rows_filtered: the query reads model_rows_of already, which tested it.
 * model_row_count counts with it and training passes read with it
 * (train_pass.c).
 */
void
append_model_row_condition(UnlearnModel *m, StringInfo cond, int param, bool rows_filtered)
{
	StringInfoData rest;

	initStringInfo(&rest);
	appendStringInfo(&rest, "%s IS NOT NULL", quote_identifier(m->def.label));
	if (m->def.loss == LOSS_SQUARED)
		appendStringInfo(&rest, " AND %s", squared_label_condition(m));
	if (m->def.nulls == NULLS_SKIP)
		appendStringInfo(&rest, " AND NOT (%s)", model_null_condition(m, false));
	if (m->def.classes_declared)
		append_declared_label_condition(m, &rest, param);

	/*
	 * With a filter, one CASE: the planner keeps it one qual, so the rest
	 * (which may evaluate feature expressions) is evaluated only for rows
	 * the filter passes, as the triggers evaluate nothing else for others
	 */
	if (m->def.filter != NULL && !rows_filtered)
		appendStringInfo(cond, "CASE WHEN %s THEN (%s) ELSE false END", model_filter_sql(m), rest.data);
	else
		appendStringInfoString(cond, rest.data);
}

/*
 * Run sql, a query whose condition append_model_row_condition wrote with
 * param 1, with m's declared classes as $1 (no parameter without them).
 * Returns SPI's code; the rows stay in SPI_tuptable.
 */
int
execute_with_model_condition(UnlearnModel *m, const char *sql, long count)
{
	Oid			type = TEXTARRAYOID;
	Datum		classes;

	if (!m->def.classes_declared)
		return SPI_execute_with_args(sql, 0, NULL, NULL, NULL, false, count);
	classes = cstring_text_array(m->released.classes, m->released.nlabels);
	return SPI_execute_with_args(sql, 1, &type, &classes, NULL, false, count);
}

/*
 * Whether an error raised while a row's feature expressions or filter were
 * evaluated is one of the row's values: data exceptions (class 22), limits
 * a value passes (54: a character code too large) and operations a value
 * asks for that are not supported (0A: a unit an interval lacks).  Such a
 * row is outside the model; any other error (a cancel, out of memory)
 * propagates.
 */
bool
expression_error_of_row(const ErrorData *edata)
{
	int			category = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

	return category == ERRCODE_DATA_EXCEPTION || category == ERRCODE_PROGRAM_LIMIT_EXCEEDED ||
		category == ERRCODE_FEATURE_NOT_SUPPORTED;
}

/*
 * The n elements of an array without nulls whose data starts at data, as
 * numeric_datum_to_double reads each, for the fixed-width numeric types
 * (their elements are stored packed at their own alignment); false for
 * any other type.  O(n), without a Datum per element.
 */
static bool
fixed_width_to_doubles(Oid elem, const char *data, int n, double *out)
{
	int			j;

	switch (elem)
	{
		case FLOAT8OID:
			memcpy(out, data, sizeof(double) * n);
			return true;
		case FLOAT4OID:
			for (j = 0; j < n; j++)
				out[j] = ((const float4 *) data)[j];
			return true;
		case INT2OID:
			for (j = 0; j < n; j++)
				out[j] = ((const int16 *) data)[j];
			return true;
		case INT4OID:
			for (j = 0; j < n; j++)
				out[j] = ((const int32 *) data)[j];
			return true;
		case INT8OID:
			for (j = 0; j < n; j++)
				out[j] = (double) ((const int64 *) data)[j];
			return true;
		default:
			return false;
	}
}

/*
 * Copy a numeric array into out[expected]; expected < 0 accepts any
 * length.  Returns the length.  A null element is an error, or with
 * missing_ok NaN (a missing value, UnlearnNulls).  Errors name the model,
 * never a value.
 */
static int
extract_array(Datum arr, double *out, int expected, const char *what, bool missing_ok)
{
	ArrayType  *a = DatumGetArrayTypeP(arr);
	Oid			elem = ARR_ELEMTYPE(a);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			j;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("%s must be a one-dimensional array", what)));
	if (!missing_ok && array_contains_nulls(a))
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
	if (!is_numeric_scalar(elem))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s has element type %s, which is not numeric", what, format_type_be(elem))));
	if (ARR_HASNULL(a) || !fixed_width_to_doubles(elem, ARR_DATA_PTR(a), n, out))
	{
		get_typlenbyvalalign(elem, &typlen, &typbyval, &typalign);
		deconstruct_array(a, elem, typlen, typbyval, typalign, &elems, &nulls, &n);
		for (j = 0; j < n; j++)
			out[j] = nulls[j] ? NAN : numeric_datum_to_double(elem, elems[j]);
		pfree(elems);
		pfree(nulls);
	}
	/* a detoasted copy would otherwise live as long as the whole load */
	if ((Pointer) a != DatumGetPointer(arr))
		pfree(a);
	return n;
}

int
extract_float_array(Datum arr, double *out, int expected, const char *what)
{
	return extract_array(arr, out, expected, what, false);
}

/* extract_float_array with a null element read as NaN, a missing value */
int
extract_float_array_missing(Datum arr, double *out, int expected, const char *what)
{
	return extract_array(arr, out, expected, what, true);
}

/* mark every value of raw[0 .. d) that is not a finite number as missing (NaN) */
void
mark_missing_values(double *raw, int d)
{
	int			j;

	if (feature_values_finite(raw, d))
		return;
	for (j = 0; j < d; j++)
		if (!isfinite(raw[j]))
			raw[j] = NAN;
}

/*
 * The SQL of feature j in build_feature_select's layout: the first feature
 * of a category() group is the group's unlearn._category_values array, its
 * other features null placeholders of their type (boolean), which
 * expand_category_columns fills from the array; any other feature as
 * stored.
 */
static const char *
feature_select_sql(UnlearnModel *m, int j)
{
	CategoryGroups *groups = model_category_groups(m);

	if (groups->length[j] > 0)
		return groups->sql[j];
	if (groups->length[j] < 0)
		return "NULL::pg_catalog.bool";
	return feature_sql(m, j);
}

/*
 * In the values of a row of build_feature_select's layout (the label at 0,
 * feature j at j + 1), replace each category() group's array and
 * placeholders by the group's boolean features, as its expressions give
 * them.
 */
void
expand_category_columns(UnlearnModel *m, Datum *values, bool *isnull)
{
	CategoryGroups *groups = model_category_groups(m);
	int			j,
				i;

	for (j = 0; j < m->def.nfeatures; j++)
	{
		int			k = groups->length[j];
		ArrayType  *a;
		const double *v;

		if (k <= 0)
			continue;
		if (isnull[j + 1])
			elog(ERROR, "unlearn: a category group of model \"%s\" read as null", m->def.name);
		a = DatumGetArrayTypeP(values[j + 1]);
		if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID || ARR_DIMS(a)[0] != k)
			elog(ERROR, "unlearn: a category group of model \"%s\" read as another array", m->def.name);
		v = (const double *) ARR_DATA_PTR(a);
		for (i = 0; i < k; i++)
		{
			values[j + 1 + i] = BoolGetDatum(v[i] != 0);
			isnull[j + 1 + i] = false;
		}
	}
}

/*
 * SELECT list of a model's columns, as stored (no casts): the label, then
 * the features.  With trailing columns (scoring), the label's place holds
 * NULL and the trailing list follows the features.  A query with a
 * feature expression runs under pin_expression_settings (feature_expr.c).
 */
char *
build_feature_select(UnlearnModel *m, const char *relation, const char *trailing)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	if (trailing != NULL)
		appendStringInfoString(&buf, "SELECT NULL");
	else
		appendStringInfo(&buf, "SELECT %s", quote_identifier(m->def.label));
	for (i = 0; i < m->def.nfeatures; i++)
		appendStringInfo(&buf, ", %s", feature_select_sql(m, i));
	if (trailing != NULL)
		appendStringInfo(&buf, ", %s", trailing);
	appendStringInfo(&buf, " FROM %s", relation);
	return buf.data;
}

/*
 * SELECT label, features..., extra FROM relation: build_feature_select's
 * layout with one more column after the features (a cohort column).
 */
char *
build_model_select(UnlearnModel *m, const char *relation, const char *extra)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfo(&buf, "SELECT %s", quote_identifier(m->def.label));
	for (i = 0; i < m->def.nfeatures; i++)
		appendStringInfo(&buf, ", %s", feature_select_sql(m, i));
	appendStringInfo(&buf, ", %s FROM %s", extra, relation);
	return buf.data;
}

/* the base type of each feature column, looked up once per model */
static const Oid *
feature_base_types(UnlearnModel *m)
{
	if (m->call.feature_base_types == NULL)
	{
		Oid		   *base = MemoryContextAlloc(GetMemoryChunkContext(m),
											  sizeof(Oid) * m->def.nfeatures);
		int			j;

		for (j = 0; j < m->def.nfeatures; j++)
			base[j] = getBaseType(m->def.column_types[j]);
		m->call.feature_base_types = base;
	}
	return m->call.feature_base_types;
}

/*
 * Whether a row has a null in a model column: the label (with_label), a
 * feature, or an element of the feature array.
 */
bool
model_row_has_null(UnlearnModel *m, const Datum *values, const bool *isnull, bool with_label)
{
	int			j;

	if (with_label && isnull[0])
		return true;
	for (j = 1; j <= m->def.nfeatures; j++)
		if (isnull[j])
			return true;
	if (m->def.feature_array)
	{
		ArrayType  *a = DatumGetArrayTypeP(values[1]);

		/* an array of another shape is an error, null or not (decode) */
		bool		has_null = ARR_NDIM(a) <= 1 && array_contains_nulls(a);

		if ((Pointer) a != DatumGetPointer(values[1]))
			pfree(a);
		return has_null;
	}
	return false;
}

/* a null label under "nulls": "error": names the column, never the row */
void
model_null_label_error(UnlearnModel *m)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("label column \"%s\" of model \"%s\" must not be null",
					m->def.label, m->def.name),
			 errhint("Every row of a trained table needs a label, or train with options => '{\"nulls\": \"skip\"}'.")));
}

/* a null in feature j under "nulls": "error" */
void
model_null_feature_error(UnlearnModel *m, int j)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("feature %s \"%s\" is null in a row of model \"%s\"",
					feature_is_expression(m, j) ? "expression" : "column",
					m->def.features[j], m->def.name),
			 errhint("Remove the row or fill in its features, or train with options => '{\"nulls\": \"skip\"}'.")));
}

/* the features of a row under "nulls": "impute": a missing value is NaN */
static void
decode_features_or_missing(UnlearnModel *m, const Datum *values, const bool *isnull, double *raw)
{
	int			j;

	if (m->def.feature_array)
	{
		if (isnull[1])
			for (j = 0; j < m->def.dims; j++)
				raw[j] = NAN;
		else
			extract_float_array_missing(values[1], raw, m->def.dims, "feature array");
	}
	else
		for (j = 0; j < m->def.nfeatures; j++)
			raw[j] = isnull[j + 1] ? NAN :
				numeric_datum_to_double(feature_base_types(m)[j], values[j + 1]);
	mark_missing_values(raw, m->def.dims);
}

/*
 * Decode one row: values[0] is the label, values[1..nfeatures] the
 * features, of the model's stored column types.  raw[d] receives the
 * features; *label the canonical label text and *label_value its value
 * (label may be NULL: scoring reads no label).  Returns false for a row
 * outside the model: under "nulls": "skip" one with a null in a model
 * column, or (from 0.20.0) a feature that is not a finite number; under
 * 'impute' one with a null label, a missing feature being NaN in raw;
 * under 'error' either is an error naming the column, never the row.
 */
bool
decode_model_row(UnlearnModel *m, const Datum *values, const bool *isnull,
				 double *raw, char **label, double *label_value)
{
	int			j;

	if (m->def.nulls == NULLS_SKIP && model_row_has_null(m, values, isnull, label != NULL))
		return false;
	if (label != NULL)
	{
		if (isnull[0] && m->def.nulls == NULLS_IMPUTE)
			return false;
		if (isnull[0])
			model_null_label_error(m);
		*label = label_from_datum(m->def.column_types[m->def.nfeatures], values[0], label_value);
	}
	if (m->def.nulls == NULLS_IMPUTE)
	{
		decode_features_or_missing(m, values, isnull, raw);
		return true;
	}
	for (j = 0; j < m->def.nfeatures; j++)
		if (isnull[j + 1])
			model_null_feature_error(m, j);
	if (m->def.feature_array && model_skips_nonfinite(m) && array_has_nonfinite_element(values[1]))
		return false;
	if (m->def.feature_array)
		extract_float_array(values[1], raw, m->def.dims, "feature array");
	else
		for (j = 0; j < m->def.nfeatures; j++)
			raw[j] = numeric_datum_to_double(feature_base_types(m)[j], values[j + 1]);
	if (model_skips_nonfinite(m) && !feature_values_finite(raw, m->def.dims))
		return false;
	check_feature_values(raw, m->def.dims, m->def.name);
	return true;
}

/*
 * Check that the result of a query built by build_feature_select has the
 * types its values are decoded as: the label (unless scoring, where its
 * place holds NULL), the features, then the ntrailing trailing columns of
 * trailing_types.  The query names its relation and columns as text, so a
 * table changed or swapped by name after the types were bound must not
 * have its values read as another type.  Once per result, not per row.
 */
void
check_feature_select_types(UnlearnModel *m, TupleDesc desc, bool with_label,
						   const Oid *trailing_types, int ntrailing)
{
	CategoryGroups *groups = model_category_groups(m);
	int			j;

	if (desc->natts != 1 + m->def.nfeatures + ntrailing)
		elog(ERROR, "unlearn: a query of model \"%s\" returned %d columns", m->def.name, desc->natts);
	for (j = with_label ? 0 : 1; j < desc->natts; j++)
		if (TupleDescAttr(desc, j)->atttypid !=
			(j == 0 ? m->def.column_types[m->def.nfeatures] :
			 j <= m->def.nfeatures && groups->length[j - 1] > 0 ? FLOAT8ARRAYOID :
			 j <= m->def.nfeatures ? m->def.column_types[j - 1] :
			 trailing_types[j - 1 - m->def.nfeatures]))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("a column of model \"%s\" changed type while its rows were being read",
							m->def.name),
					 errhint("Retry the statement.")));
}

/* the model's columns of a tuple of build_feature_select's layout */
static void
spi_row_values(UnlearnModel *m, HeapTuple tuple, TupleDesc desc, Datum **values, bool **isnull)
{
	/* deformed at once: column by column is quadratic in a row with nulls */
	*values = palloc(sizeof(Datum) * Max(desc->natts, m->def.nfeatures + 1));
	*isnull = palloc(sizeof(bool) * Max(desc->natts, m->def.nfeatures + 1));
	heap_deform_tuple(tuple, desc, *values, *isnull);
	expand_category_columns(m, *values, *isnull);
}

/* decode_model_row for a tuple of build_feature_select's layout */
bool
decode_spi_row(UnlearnModel *m, HeapTuple tuple, TupleDesc desc, double *raw,
			   char **label, double *label_value)
{
	Datum	   *values;
	bool	   *isnull;
	bool		decoded;

	spi_row_values(m, tuple, desc, &values, &isnull);
	decoded = decode_model_row(m, values, isnull, raw, label, label_value);
	pfree(values);
	pfree(isnull);
	return decoded;
}

/*
 * Reading a model's row from a tuple of the table (or one of its
 * partitions) that a trigger sees.  Columns are found by name in that
 * relation, whose column order may differ from its root's, and must have
 * the types the model was trained on; feature expressions are evaluated
 * over the slot (feature_expr.c).
 */
struct SlotRowReader
{
	UnlearnModel *m;
	AttrNumber *attnums;		/* label, then features; 0 for an expression */
	Datum	   *values;
	bool	   *isnull;
	FeatureEvaluator *expressions;
	bool		evaluating;		/* inside the expressions of a row */
	bool		filtered;		/* the last row decoded failed the row filter */
	AttrNumber	cohort_attnum;	/* the cohort column, or 0 */
	Oid			cohort_base;	/* its base type */
};

SlotRowReader *
slot_row_reader_begin(UnlearnModel *m, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	SlotRowReader *reader = palloc0(sizeof(SlotRowReader));
	int			j;

	reader->m = m;
	reader->attnums = palloc(sizeof(AttrNumber) * (m->def.nfeatures + 1));
	reader->values = palloc(sizeof(Datum) * (m->def.nfeatures + 1));
	reader->isnull = palloc(sizeof(bool) * (m->def.nfeatures + 1));
	reader->expressions = feature_evaluator_create(m, desc, true);
	for (j = 0; j <= m->def.nfeatures; j++)
	{
		const char *col = j == 0 ? m->def.label : m->def.features[j - 1];

		if (j > 0 && feature_is_expression(m, j - 1))
		{
			reader->attnums[j] = InvalidAttrNumber; /* evaluated over the slot */
			continue;
		}
		reader->attnums[j] = get_attnum(RelationGetRelid(rel), col);
		if (reader->attnums[j] <= 0 ||
			getBaseType(TupleDescAttr(desc, reader->attnums[j] - 1)->atttypid) !=
			getBaseType(m->def.column_types[j == 0 ? m->def.nfeatures : j - 1]))
		{
			verify_source_columns(m);	/* names the column of the root */
			elog(ERROR, "column \"%s\" of model \"%s\" does not match relation \"%s\"",
				 col, m->def.name, RelationGetRelationName(rel));
		}
	}
	if (m->def.cohort != NULL)
	{
		reader->cohort_attnum = get_attnum(RelationGetRelid(rel), m->def.cohort);
		if (reader->cohort_attnum <= 0 ||
			!cohort_type_supported(TupleDescAttr(desc, reader->cohort_attnum - 1)->atttypid))
			elog(ERROR, "cohort column \"%s\" of model \"%s\" does not match relation \"%s\"",
				 m->def.cohort, m->def.name, RelationGetRelationName(rel));
		reader->cohort_base = getBaseType(TupleDescAttr(desc, reader->cohort_attnum - 1)->atttypid);
	}
	return reader;
}

/*
 * decode_model_row for the tuple in slot, into raw (p doubles) and its
 * label; false for a row outside the model (a null under "nulls": "skip",
 * or a label that is no declared class).
 */
bool
slot_row_decode(SlotRowReader *reader, TupleTableSlot *slot, double *raw, char **label,
				double *label_value)
{
	UnlearnModel *m = reader->m;
	bool		decoded;
	int			j;

	reader->filtered = false;
	for (j = 0; j <= m->def.nfeatures; j++)
		if (reader->attnums[j] != InvalidAttrNumber)
			reader->values[j] = slot_getattr(slot, reader->attnums[j], &reader->isnull[j]);
	if (reader->expressions != NULL)
	{
		/* a row the filter leaves out is outside the model */
		reader->evaluating = true;
		if (!feature_evaluator_selects(reader->expressions, slot))
		{
			reader->filtered = true;
			reader->evaluating = false;
			feature_evaluator_reset(reader->expressions);
			return false;
		}
		feature_evaluator_fill(reader->expressions, slot, reader->values, reader->isnull);
		reader->evaluating = false;
	}
	decoded = decode_model_row(m, reader->values, reader->isnull, raw, label, label_value) &&
		model_takes_label(m, *label, *label_value);
	if (reader->expressions != NULL)
		feature_evaluator_reset(reader->expressions);
	return decoded;
}

/*
 * Whether the last row decoded was left out by the model's row filter: a
 * row that is no row of the model's, not counted among the skipped
 */
bool
slot_row_filtered(SlotRowReader *reader)
{
	return reader->filtered;
}

/* the cohort key of a row (cohorts.c), or NULL: none, or no cohort column */
char *
slot_row_cohort(SlotRowReader *reader, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		d;

	if (reader->cohort_attnum <= 0)
		return NULL;
	d = slot_getattr(slot, reader->cohort_attnum, &isnull);
	return isnull ? NULL : cohort_key(reader->cohort_base, d);
}

typedef struct GuardedDecode
{
	SlotRowReader *reader;
	TupleTableSlot *slot;
	double	   *raw;
	char	  **label;
	double	   *label_value;
	bool		decoded;
} GuardedDecode;

static void
guarded_decode_work(void *arg)
{
	GuardedDecode *d = (GuardedDecode *) arg;

	d->decoded = slot_row_decode(d->reader, d->slot, d->raw, d->label, d->label_value);
}

/* an error of the row's data raised inside a feature expression */
static bool
expression_failed(const ErrorData *edata, void *arg)
{
	GuardedDecode *d = (GuardedDecode *) arg;
	bool		failed = d->reader->evaluating &&
		expression_error_of_row(edata);

	d->reader->evaluating = false;
	return failed;
}

/*
 * slot_row_decode of a row of a change, for which no feature expression
 * may make the statement fail: when an expression raises an error for the
 * row's values (expression_error_of_row: ln of 0, a division by zero, an
 * overflow), the row is outside the model, *failed is set and false
 * returned.  Any other error (a null under "nulls": "error", a cancel,
 * out of memory) propagates.  A model without expressions decodes as
 * slot_row_decode does; one with expressions runs each row in a
 * subtransaction, as a PL/pgSQL exception block would.
 */
bool
slot_row_decode_guarded(SlotRowReader *reader, TupleTableSlot *slot, double *raw,
						char **label, double *label_value, bool *failed)
{
	GuardedDecode d = {reader, slot, raw, label, label_value, false};
	ErrorData  *edata;

	*failed = false;
	if (reader->expressions == NULL)
		return slot_row_decode(reader, slot, raw, label, label_value);
	edata = run_in_subtransaction(guarded_decode_work, &d, expression_failed);
	if (edata == NULL)
		return d.decoded;
	FreeErrorData(edata);
	feature_evaluator_reset(reader->expressions);
	*failed = true;
	return false;
}

void
slot_row_reader_end(SlotRowReader *reader)
{
	if (reader->expressions != NULL)
		feature_evaluator_free(reader->expressions);
	pfree(reader->attnums);
	pfree(reader->values);
	pfree(reader->isnull);
	pfree(reader);
}

/* --- batches of rows (trigger.c, deferred.c, cohorts.c) ------------------ */

/* an empty batch of rows of p doubles */
RowBatch *
new_row_batch(int p, int capacity)
{
	RowBatch   *batch = palloc0(sizeof(RowBatch));

	capacity = Max(capacity, 1);
	batch->x = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * p * capacity);
	batch->labels = palloc(sizeof(char *) * capacity);
	batch->label_values = palloc(sizeof(double) * capacity);
	batch->cohorts = palloc0(sizeof(char *) * capacity);
	return batch;
}

/* room for one more row in batch (rows of p doubles), doubling *capacity */
void
row_batch_reserve(RowBatch *batch, int p, int *capacity)
{
	if (batch->count < *capacity)
		return;
	*capacity *= 2;
	batch->x = repalloc_huge(batch->x, sizeof(double) * p * *capacity);
	batch->labels = repalloc(batch->labels, sizeof(char *) * *capacity);
	batch->label_values = repalloc(batch->label_values, sizeof(double) * *capacity);
	batch->cohorts = repalloc(batch->cohorts, sizeof(char *) * *capacity);
	memset(batch->cohorts + batch->count, 0, sizeof(char *) * (*capacity - batch->count));
}

/* append row i of in to out (rows of p doubles; out has room) */
void
row_batch_keep(int p, RowBatch *out, const RowBatch *in, int i)
{
	memcpy(out->x + (Size) out->count * p, in->x + (Size) i * p, sizeof(double) * p);
	out->labels[out->count] = in->labels[i];
	out->label_values[out->count] = in->label_values[i];
	out->cohorts[out->count] = in->cohorts[i];
	out->count++;
}

/* --- the values that name cohorts (cohorts.c) ------------------------------ */

/* the types whose values name cohorts: read in binary, no role's code */
bool
cohort_type_supported(Oid type)
{
	Oid			base = getBaseType(type);

	return base == INT2OID || base == INT4OID || base == INT8OID || base == TEXTOID ||
		base == VARCHAROID || base == UUIDOID || base == BOOLOID;
}

/* the collation clause that compares base's values byte for byte, as keys */
const char *
cohort_collation(Oid base)
{
	return base == TEXTOID || base == VARCHAROID ? " COLLATE \"C\"" : "";
}

/*
 * The key of a cohort value of base type base: its text, formed here
 * without any setting (and so the same in every session); NULL when it is
 * longer than COHORT_MAX_KEY, so that its rows are in no cohort.
 */
char *
cohort_key(Oid base, Datum d)
{
	char	   *key;

	switch (base)
	{
		case INT2OID:
			return psprintf("%d", (int) DatumGetInt16(d));
		case INT4OID:
			return psprintf("%d", DatumGetInt32(d));
		case INT8OID:
			return psprintf(INT64_FORMAT, DatumGetInt64(d));
		case BOOLOID:
			return pstrdup(DatumGetBool(d) ? "true" : "false");
		case UUIDOID:
			return DatumGetCString(DirectFunctionCall1(uuid_out, d));
		default:
			key = TextDatumGetCString(d);
			if (strlen(key) > COHORT_MAX_KEY)
				return NULL;
			return key;
	}
}
