/*-------------------------------------------------------------------------
 *
 * pass_rows.c
 *	  The row functions of a training pass (train_pass.c): SQL functions
 *	  that turn the model's columns of one row into x_i and y_i inside the
 *	  pass's aggregate query, in parallel workers too.
 *
 *	  unlearn._row_values(VARIADIC "any") -> float8[]
 *		the raw feature values of the row, decoded as the triggers decode
 *		them (rows.c): numeric scalars and booleans, or one numeric array.
 *		A null value or element is NaN, a missing value, and a null array
 *		gives NULL: only a model that imputes reads rows with them.
 *	  unlearn._row_x(model text, map float8[], raw float8[]) -> float8[]
 *		the raw values checked finite (errors name the model), then mapped
 *		by the row map of column_map.c; map NULL leaves them raw.  Under a
 *		map that imputes, a value that is not finite is missing and raw
 *		NULL is a row of missing values.  Each call counts one row in the
 *		progress of the pass (progress.c).
 *	  unlearn._row_raw(model text, raw float8[]) -> float8[]
 *		the raw values with each one that is not finite marked missing
 *		(NaN), for the moments pass of a model that imputes; counts the
 *		row as _row_x does.
 *	  unlearn._category_values(value anyelement, categories anyarray)
 *		-> float8[]
 *		the features of one category() group (feature_expr.c) in one
 *		lookup: 1 for each category equal to value, 0 for the others, then
 *		"other", 1 when none is equal or value is null.  Text, integer and
 *		boolean values only, compared by their built-in equality (text
 *		bytewise, as under a deterministic collation).
 *	  unlearn._row_target(model text, label "any", positive text) -> float8
 *		the label's canonical text (rows.c) compared with positive: +1 if
 *		equal, -1 if not; positive NULL (squared loss): the label's value,
 *		which must be finite (errors name the model).
 *
 * The map travels as a float8[] built by row_map_array: dims, intercept
 * (0 or 1), the intercept scaling a, the divisor D, pooled (0 or 1), the
 * number of mapped columns c (0: no centre and spread), then c centres
 * and c spreads, and for a map that imputes a trailing 1.
 *
 * They are pure functions of their arguments, so any role may call them:
 * they read no catalog and no row but the ones they are given, and write
 * nothing but a row count into their own backend's (or parallel leader's)
 * progress slot while it reports.
 *
 * Cost: O(d) per row; _category_values O(k) for k categories, one hash and
 * one equality test per row with distinct hashes.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include <cblas.h>

#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "nodes/supportnodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#define MAP_HEADER 6

/* the map of m as the float8[] the row functions read */
Datum
row_map_array(const UnlearnModel *m)
{
	RowMap		map;
	int			ncol;
	double	   *v;
	int			n;
	int			c;

	model_row_map(m, &map);
	ncol = map.centre != NULL ? map_columns(m) : 0;
	n = MAP_HEADER + 2 * ncol + (map.impute ? 1 : 0);
	v = palloc(sizeof(double) * n);
	v[0] = map.dims;
	v[1] = map.intercept ? 1 : 0;
	v[2] = map.intercept_scaling;
	v[3] = map.scale;
	v[4] = map.pooled ? 1 : 0;
	v[5] = ncol;
	for (c = 0; c < ncol; c++)
	{
		v[MAP_HEADER + c] = map.centre[c];
		v[MAP_HEADER + ncol + c] = map.spread[c];
	}
	if (map.impute)
		v[n - 1] = 1;
	return float8_array(v, n);
}

static void
bad_map(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid row map"),
			 errhint("unlearn._row_x is called by training passes with the map they build.")));
}

/* read a map array built by row_map_array, checking its shape */
static void
row_map_from_array(ArrayType *a, RowMap *map)
{
	const double *v;
	int			n;
	int			ncol;

	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		bad_map();
	n = ARR_DIMS(a)[0];
	v = (const double *) ARR_DATA_PTR(a);
	if (n < MAP_HEADER || !(v[0] >= 1 && v[0] <= UNLEARN_MAX_DIMS) ||
		!(v[5] >= 0 && v[5] <= v[0]) ||
		(n != MAP_HEADER + 2 * (int) v[5] &&
		 (n != MAP_HEADER + 2 * (int) v[5] + 1 || v[n - 1] != 1)))
		bad_map();
	ncol = (int) v[5];
	map->dims = (int) v[0];
	map->intercept = v[1] != 0;
	map->intercept_scaling = v[2];
	map->scale = v[3];
	map->pooled = v[4] != 0;
	map->impute = n == MAP_HEADER + 2 * ncol + 1;
	if (ncol != 0 && ncol != (map->pooled ? 1 : map->dims))
		bad_map();
	map->centre = ncol > 0 ? v + MAP_HEADER : NULL;
	map->spread = ncol > 0 ? v + MAP_HEADER + ncol : NULL;
}

/*
 * unlearn._row_values(VARIADIC "any"): the features as doubles, a null
 * argument or element as NaN, a null array as NULL.  A pass of a model
 * that does not impute reads only rows its census (train_pass.c) found
 * free of nulls, or filtered them out, and _row_x refuses a NaN there.
 */
/* the argument types of one _row_values call site, kept in fn_extra */
typedef struct RowValuesTypes
{
	bool		array;			/* one array argument */
	Oid			base[FLEXIBLE_ARRAY_MEMBER];	/* each argument's base type */
} RowValuesTypes;

/*
 * The base types of a row function's feature arguments (fn, for its
 * error), once per call site; with check_scalars, features that are not
 * one array must each be of a type a feature may have.
 */
static RowValuesTypes *
row_values_types(FunctionCallInfo fcinfo, const char *fn, bool check_scalars)
{
	RowValuesTypes *t = fcinfo->flinfo->fn_extra;
	int			nargs = PG_NARGS();
	int			j;

	if (t != NULL)
		return t;
	if (get_fn_expr_variadic(fcinfo->flinfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s takes its features as separate arguments", fn)));
	t = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt,
						   offsetof(RowValuesTypes, base) + sizeof(Oid) * Max(nargs, 1));
	for (j = 0; j < nargs; j++)
		t->base[j] = getBaseType(get_fn_expr_argtype(fcinfo->flinfo, j));
	t->array = nargs == 1 && type_is_array(t->base[0]);
	if (!t->array && check_scalars)
		for (j = 0; j < nargs; j++)
			if (!is_feature_scalar(t->base[j]))
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("a feature of type %s is not numeric", format_type_be(t->base[j]))));
	fcinfo->flinfo->fn_extra = t;
	return t;
}

PG_FUNCTION_INFO_V1(unlearn_row_values);
Datum
unlearn_row_values(PG_FUNCTION_ARGS)
{
	RowValuesTypes *types = row_values_types(fcinfo, "unlearn._row_values", true);
	int			nargs = PG_NARGS();
	double	   *raw;
	int			n;
	int			j;

	if (types->array)
	{
		/* detoasted once; a float8 array without nulls passes through as it is */
		Datum		arr;
		ArrayType  *a;

		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		arr = PointerGetDatum(PG_DETOAST_DATUM(PG_GETARG_DATUM(0)));
		a = DatumGetArrayTypeP(arr);
		n = extract_float_array_missing(arr, NULL, -1, "feature array");
		if (ARR_ELEMTYPE(a) == FLOAT8OID && ARR_NDIM(a) == 1 && ARR_LBOUND(a)[0] == 1 &&
			!ARR_HASNULL(a))
			PG_RETURN_ARRAYTYPE_P(a);
		raw = palloc(sizeof(double) * Max(n, 1));
		extract_float_array_missing(arr, raw, n, "feature array");
	}
	else
	{
		n = nargs;
		raw = palloc(sizeof(double) * Max(n, 1));
		for (j = 0; j < nargs; j++)
			raw[j] = PG_ARGISNULL(j) ? NAN :
				numeric_datum_to_double(types->base[j], PG_GETARG_DATUM(j));
	}
	PG_RETURN_DATUM(float8_array(raw, n));
}

/* unlearn._row_x(model text, map float8[], raw float8[]) */
PG_FUNCTION_INFO_V1(unlearn_row_x);
Datum
unlearn_row_x(PG_FUNCTION_ARGS)
{
	ArrayType  *a;
	text	   *model;
	RowMap		map;
	double	   *row;
	int			n;
	int			p;

	if (PG_ARGISNULL(0) || (PG_ARGISNULL(2) && PG_ARGISNULL(1)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("unlearn._row_x needs a model name and the raw values")));
	model = PG_GETARG_TEXT_PP(0);
	progress_count_row(VARDATA_ANY(model), VARSIZE_ANY_EXHDR(model));
	if (PG_ARGISNULL(2))
	{
		/* a null array: under a map that imputes, every value is missing */
		row_map_from_array(PG_GETARG_ARRAYTYPE_P(1), &map);
		if (!map.impute)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("unlearn._row_x needs a model name and the raw values")));
		p = map.dims + (map.intercept ? 1 : 0);
		row = palloc(sizeof(double) * p);
		for (n = 0; n < map.dims; n++)
			row[n] = NAN;
		map_row(&map, row);
		PG_RETURN_DATUM(float8_array(row, p));
	}
	a = PG_GETARG_ARRAYTYPE_P(2);
	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("the raw values must be a one-dimensional float8 array without nulls")));
	n = ARR_DIMS(a)[0];
	if (PG_ARGISNULL(1))
	{
		if (!feature_values_finite((const double *) ARR_DATA_PTR(a), n))
			check_feature_values((const double *) ARR_DATA_PTR(a), n, text_to_cstring(model));
		PG_RETURN_ARRAYTYPE_P(a);
	}
	row_map_from_array(PG_GETARG_ARRAYTYPE_P(1), &map);
	if (n != map.dims)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("expected %d features, not %d", map.dims, n),
				 errhint("Every row must have as many features as the model was trained with.")));
	p = map.dims + (map.intercept ? 1 : 0);
	row = palloc(sizeof(double) * p);
	memcpy(row, ARR_DATA_PTR(a), sizeof(double) * n);
	if (map.impute)
		mark_missing_values(row, n);
	else if (!feature_values_finite(row, n))
		check_feature_values(row, n, text_to_cstring(model));
	map_row(&map, row);
	PG_RETURN_DATUM(float8_array(row, p));
}

/* unlearn._row_raw(model text, raw float8[]): strict */
PG_FUNCTION_INFO_V1(unlearn_row_raw);
Datum
unlearn_row_raw(PG_FUNCTION_ARGS)
{
	text	   *model = PG_GETARG_TEXT_PP(0);
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P_COPY(1);

	progress_count_row(VARDATA_ANY(model), VARSIZE_ANY_EXHDR(model));
	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("the raw values must be a one-dimensional float8 array without nulls")));
	mark_missing_values((double *) ARR_DATA_PTR(a), ARR_DIMS(a)[0]);
	PG_RETURN_ARRAYTYPE_P(a);
}

/*
 * unlearn._array_shape(anyarray): what the census (train_pass.c) needs of
 * a row's feature array, from one detoasting: -1 if it is one-dimensional
 * with a null element, else the length of its first dimension (0 for an
 * empty array).  Strict: null for a null array.
 */
PG_FUNCTION_INFO_V1(unlearn_array_shape);
Datum
unlearn_array_shape(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);

	if (ARR_NDIM(a) == 1 && array_contains_nulls(a))
		PG_RETURN_INT32(-1);
	PG_RETURN_INT32(ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0]);
}

/*
 * unlearn._finite(VARIADIC "any"): whether every feature of a row decodes,
 * as decode_model_row decodes it (numeric_datum_to_double), to a finite
 * number; for an array, whether a one-dimensional one has no element that
 * does not (array_has_nonfinite_element, which decode_model_row asks before
 * the array's length).  Nulls (and null elements) count as finite: the
 * null conditions leave them out.
 * Under "nulls": "skip" the rows where it is false are outside the model
 * (model_null_condition).
 */
PG_FUNCTION_INFO_V1(unlearn_finite);
Datum
unlearn_finite(PG_FUNCTION_ARGS)
{
	RowValuesTypes *types = row_values_types(fcinfo, "unlearn._finite", false);
	int			nargs = PG_NARGS();
	int			j;

	for (j = 0; j < nargs; j++)
	{
		if (PG_ARGISNULL(j))
			continue;
		if (types->array)
		{
			if (array_has_nonfinite_element(PG_GETARG_DATUM(j)))
				PG_RETURN_BOOL(false);
		}
		else if (!is_feature_scalar(types->base[j]) ||
				 !isfinite(numeric_datum_to_double(types->base[j], PG_GETARG_DATUM(j))))
			PG_RETURN_BOOL(false);
	}
	PG_RETURN_BOOL(true);
}

/*
 * The planner support of unlearn._finite: its selectivity is 1.  A row
 * with a feature that is not finite is rare, and the default estimate of a
 * boolean function (one row in three) would make the planner read a big
 * table serially, or aggregate its parallel passes in the leader.
 */
PG_FUNCTION_INFO_V1(unlearn_finite_support);
Datum
unlearn_finite_support(PG_FUNCTION_ARGS)
{
	Node	   *request = (Node *) PG_GETARG_POINTER(0);

	if (IsA(request, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *s = (SupportRequestSelectivity *) request;

		s->selectivity = 1.0;
		PG_RETURN_POINTER(s);
	}
	PG_RETURN_POINTER(NULL);
}

/* the label's type at this call site and the losses it serves, in fn_extra */
typedef struct LabelType
{
	Oid			type;
	Oid			base;			/* its base type */
	bool		logistic;
	bool		squared;
} LabelType;

/* the base type of the label argument, checked to serve the call's loss */
static Oid
label_argument_base(FunctionCallInfo fcinfo)
{
	LabelType  *t = fcinfo->flinfo->fn_extra;

	if (t == NULL)
	{
		t = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(LabelType));
		t->type = get_fn_expr_argtype(fcinfo->flinfo, 1);
		t->base = getBaseType(t->type);
		t->logistic = label_type_supported(t->type, LOSS_LOGISTIC);
		t->squared = label_type_supported(t->type, LOSS_SQUARED);
		fcinfo->flinfo->fn_extra = t;
	}
	if (!(PG_ARGISNULL(2) ? t->squared : t->logistic))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a label of type %s is not supported", format_type_be(t->type))));
	return t->base;
}

/* unlearn._row_target(model text, label "any", positive text) */
PG_FUNCTION_INFO_V1(unlearn_row_target);
Datum
unlearn_row_target(PG_FUNCTION_ARGS)
{
	Oid			base;
	double		value;
	char	   *label;
	text	   *positive;
	double		target;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("unlearn._row_target needs a model name and a label")));
	base = label_argument_base(fcinfo);
	label = label_from_base_datum(base, PG_GETARG_DATUM(1), &value);
	if (PG_ARGISNULL(2))
	{
		if (!isfinite(value))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("label of model \"%s\" must be a finite number",
							text_to_cstring(PG_GETARG_TEXT_PP(0))),
					 errhint("Remove or fix rows whose label is NaN or infinite.")));
		PG_RETURN_FLOAT8(value);
	}
	positive = PG_GETARG_TEXT_PP(2);
	target = strlen(label) == VARSIZE_ANY_EXHDR(positive) &&
		memcmp(label, VARDATA_ANY(positive), VARSIZE_ANY_EXHDR(positive)) == 0 ? 1.0 : -1.0;
	pfree(label);
	PG_RETURN_FLOAT8(target);
}

/* a float8[] argument's values: one dimension, no null element */
static const double *
plain_doubles(FunctionCallInfo fcinfo, int argno, int *n)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(argno);

	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("unlearn's row functions take one-dimensional float8 arrays without nulls")));
	*n = ARR_DIMS(a)[0];
	return (const double *) ARR_DATA_PTR(a);
}

/*
 * unlearn._row_margin(x float8[], w float8[]) -> float8: w.x, the value a
 * least-squares model predicts for the mapped row x.
 */
PG_FUNCTION_INFO_V1(unlearn_row_margin);
Datum
unlearn_row_margin(PG_FUNCTION_ARGS)
{
	int			p,
				q;
	const double *x = plain_doubles(fcinfo, 0, &p);
	const double *w = plain_doubles(fcinfo, 1, &q);

	if (p != q)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("unlearn._row_margin needs x and w of one length")));
	PG_RETURN_FLOAT8(p > 0 ? cblas_ddot(p, x, 1, w, 1) : 0.0);
}

/*
 * unlearn._row_class(x float8[], coef float8[], classes int4) -> int4: the
 * position (from 1) among the model's labels of the class it predicts for
 * the mapped row x: with one weight vector, 2 (the positive label) when
 * w.x > 0 and 1 otherwise; with K of them (one-vs-rest, coef K x p), the
 * first of the largest margins.
 */
PG_FUNCTION_INFO_V1(unlearn_row_class);
Datum
unlearn_row_class(PG_FUNCTION_ARGS)
{
	int			p,
				n;
	const double *x = plain_doubles(fcinfo, 0, &p);
	const double *coef = plain_doubles(fcinfo, 1, &n);
	int			K = PG_GETARG_INT32(2);
	int			best = 0,
				k;
	double		top = -INFINITY;

	if (K < 1 || p < 1 || (int64) K * p != n)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("unlearn._row_class needs coef of classes times the length of x")));
	if (K == 1)
		PG_RETURN_INT32(cblas_ddot(p, coef, 1, x, 1) > 0 ? 2 : 1);
	for (k = 0; k < K; k++)
	{
		double		margin = cblas_ddot(p, coef + (Size) k * p, 1, x, 1);

		if (margin > top)
		{
			top = margin;
			best = k;
		}
	}
	PG_RETURN_INT32(best + 1);
}

/* the categories of one _category_values call site, kept in fn_extra */
typedef struct CategoryLookup
{
	Oid			type;
	int			n;
	TypeCacheEntry *typcache;	/* its built-in equality and hash */
	Datum	   *values;
	uint32	   *hashes;
} CategoryLookup;

/* a value's hash under its type's built-in hash function */
static uint32
category_hash(CategoryLookup *c, Datum value)
{
	return DatumGetUInt32(FunctionCall1Coll(&c->typcache->hash_proc_finfo, C_COLLATION_OID, value));
}

static CategoryLookup *
category_lookup(FunctionCallInfo fcinfo)
{
	CategoryLookup *c = fcinfo->flinfo->fn_extra;
	bool		stable = get_fn_expr_arg_stable(fcinfo->flinfo, 1);
	MemoryContext old;
	ArrayType  *arr;
	bool	   *nulls;
	Oid			type;
	int			i;

	if (c != NULL)
		return c;
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("unlearn._category_values needs its categories")));
	type = getBaseType(get_fn_expr_argtype(fcinfo->flinfo, 0));
	if (type != TEXTOID && type != INT2OID && type != INT4OID && type != INT8OID && type != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("unlearn._category_values compares text, integer or boolean values, not %s",
						format_type_be(type))));
	/* kept for the call site's next rows when the categories are a constant */
	old = MemoryContextSwitchTo(stable ? fcinfo->flinfo->fn_mcxt : CurrentMemoryContext);
	c = palloc0(sizeof(CategoryLookup));
	c->type = type;
	c->typcache = lookup_type_cache(type, TYPECACHE_EQ_OPR_FINFO | TYPECACHE_HASH_PROC_FINFO);
	arr = PG_GETARG_ARRAYTYPE_P_COPY(1);
	if (ARR_ELEMTYPE(arr) != type || ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the categories of unlearn._category_values must be a one-dimensional array of the value's type")));
	deconstruct_array(arr, type, c->typcache->typlen, c->typcache->typbyval, c->typcache->typalign,
					  &c->values, &nulls, &c->n);
	c->hashes = palloc(sizeof(uint32) * Max(c->n, 1));
	for (i = 0; i < c->n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the categories of unlearn._category_values must not contain a null")));
		c->hashes[i] = category_hash(c, c->values[i]);
	}
	MemoryContextSwitchTo(old);
	if (stable)
		fcinfo->flinfo->fn_extra = c;
	return c;
}

PG_FUNCTION_INFO_V1(unlearn_category_values);
Datum
unlearn_category_values(PG_FUNCTION_ARGS)
{
	CategoryLookup *c = category_lookup(fcinfo);
	double	   *v = palloc0(sizeof(double) * (c->n + 1));
	bool		matched = false;

	if (!PG_ARGISNULL(0))
	{
		Datum		value = PG_GETARG_DATUM(0);
		uint32		h = category_hash(c, value);
		int			i;

		for (i = 0; i < c->n; i++)
			if (c->hashes[i] == h &&
				DatumGetBool(FunctionCall2Coll(&c->typcache->eq_opr_finfo, C_COLLATION_OID,
											   value, c->values[i])))
			{
				v[i] = 1.0;
				matched = true;
			}
	}
	v[c->n] = matched ? 0.0 : 1.0;
	PG_RETURN_DATUM(float8_array(v, c->n + 1));
}
