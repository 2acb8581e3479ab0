/*-------------------------------------------------------------------------
 *
 * train_options.c
 *	  unlearn_train's options => jsonb: the rarely changed settings of a
 *	  model, checked by name and JSON type and returned as one
 *	  unlearn.train_options row with every default filled in.
 *
 * The values themselves (which bound, which policy) are checked where
 * they are used, by unlearn._train; this file only knows the names, the
 * JSON types and the defaults.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

PG_FUNCTION_INFO_V1(unlearn_train_options);

typedef enum OptionKind
{
	OPTION_BOOLEAN,
	OPTION_TEXT,
	OPTION_TEXT_ARRAY,			/* of strings, numbers or booleans */
	OPTION_FLOAT_ARRAY,			/* of numbers (or "NaN"-like strings) */
	OPTION_NUMBER
} OptionKind;

typedef struct TrainOption
{
	const char *name;
	OptionKind	kind;
	const char *fallback;		/* the default, or NULL for SQL NULL */
} TrainOption;

/* in the order of the columns of unlearn.train_options */
static const TrainOption train_options[] = {
	{"intercept", OPTION_BOOLEAN, "true"},
	{"bound", OPTION_TEXT, "taylor"},
	{"on_exhausted", OPTION_TEXT, "retrain"},
	{"steps", OPTION_TEXT, "statement"},
	{"preprocess", OPTION_TEXT, "standardize"},
	{"centre", OPTION_FLOAT_ARRAY, NULL},
	{"spread", OPTION_FLOAT_ARRAY, NULL},
	{"nulls", OPTION_TEXT, "impute"},
	{"classes", OPTION_TEXT_ARRAY, NULL},
	{"removal", OPTION_TEXT, "immediate"},
	{"noise", OPTION_NUMBER, NULL},
	{"step_size", OPTION_NUMBER, NULL},
	{"training_steps", OPTION_NUMBER, NULL},
};

/* the options of the 0.17.0 catalog's unlearn.train_options, the first */
#define OPTIONS_OF_0_17_0 10

#define OPTION_NAMES "intercept, bound, on_exhausted, steps, preprocess, centre, spread, nulls, classes, removal, noise, step_size, training_steps"

static const char *
kind_name(OptionKind kind)
{
	switch (kind)
	{
		case OPTION_BOOLEAN:
			return "a boolean";
		case OPTION_TEXT:
			return "a string";
		case OPTION_TEXT_ARRAY:
			return "an array of labels";
		case OPTION_FLOAT_ARRAY:
			return "an array of numbers";
		case OPTION_NUMBER:
			return "a number";
	}
	return "?";
}

static void
wrong_type(const TrainOption *option)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("option \"%s\" of unlearn_train must be %s",
					option->name, kind_name(option->kind)),
			 errhint("For example: options => '{\"nulls\": \"error\", \"classes\": [\"a\", \"b\"], \"centre\": [0, 1]}'.")));
}

/* one element of an array option as text, or an error */
static char *
element_text(const TrainOption *option, JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		case jbvBool:
			if (option->kind == OPTION_TEXT_ARRAY)
				return pstrdup(v->val.boolean ? "true" : "false");
			break;
		default:
			break;
	}
	wrong_type(option);
	return NULL;
}

/* an array option's JSON array as text[] or float8[] */
static Datum
array_option(const TrainOption *option, JsonbValue *container)
{
	JsonbIterator *it;
	JsonbIteratorToken token;
	JsonbValue	v;
	ArrayBuildState *build;
	bool		numeric = option->kind == OPTION_FLOAT_ARRAY;

	if (container->type != jbvBinary ||
		!JsonContainerIsArray(container->val.binary.data) ||
		JsonContainerIsScalar(container->val.binary.data))
		wrong_type(option);
	build = initArrayResult(numeric ? FLOAT8OID : TEXTOID, CurrentMemoryContext, false);
	it = JsonbIteratorInit(container->val.binary.data);
	while ((token = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *text;
		Datum		element;

		if (token != WJB_ELEM)
			continue;
		if (v.type == jbvNull)
		{
			/* refused where the array is used, as a null element */
			build = accumArrayResult(build, (Datum) 0, true,
									 numeric ? FLOAT8OID : TEXTOID, CurrentMemoryContext);
			continue;
		}
		if (numeric && v.type != jbvNumeric && v.type != jbvString)
			wrong_type(option);
		text = element_text(option, &v);
		element = numeric ?
			DirectFunctionCall1(float8in, CStringGetDatum(text)) :
			CStringGetTextDatum(text);
		build = accumArrayResult(build, element, false,
								 numeric ? FLOAT8OID : TEXTOID, CurrentMemoryContext);
	}
	return makeArrayResult(build, CurrentMemoryContext);
}

static Datum
option_value(const TrainOption *option, JsonbValue *v, bool *isnull)
{
	*isnull = false;
	if (v->type == jbvNull)
	{
		if (option->fallback != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("option \"%s\" of unlearn_train must not be null", option->name),
					 errhint("Leave the option out to take its default, '%s'.", option->fallback)));
		*isnull = true;
		return (Datum) 0;
	}
	switch (option->kind)
	{
		case OPTION_BOOLEAN:
			if (v->type != jbvBool)
				wrong_type(option);
			return BoolGetDatum(v->val.boolean);
		case OPTION_TEXT:
			if (v->type != jbvString)
				wrong_type(option);
			return PointerGetDatum(cstring_to_text_with_len(v->val.string.val,
															v->val.string.len));
		case OPTION_TEXT_ARRAY:
		case OPTION_FLOAT_ARRAY:
			return array_option(option, v);
		case OPTION_NUMBER:
			if (v->type != jbvNumeric)
				wrong_type(option);
			return DirectFunctionCall1(numeric_float8, NumericGetDatum(v->val.numeric));
	}
	return (Datum) 0;
}

static Datum
option_default(const TrainOption *option, bool *isnull)
{
	*isnull = option->fallback == NULL;
	if (*isnull)
		return (Datum) 0;
	if (option->kind == OPTION_BOOLEAN)
		return BoolGetDatum(strcmp(option->fallback, "true") == 0);
	/* a catalog before 0.20.0 keeps no imputing model: its default skips */
	if (strcmp(option->name, "nulls") == 0 && !catalog_has_imputation())
		return CStringGetTextDatum("skip");
	return CStringGetTextDatum(option->fallback);
}

/*
 * unlearn._train_options(options jsonb) returns unlearn.train_options:
 * each known option from options, or its default; an unknown name, a
 * value of the wrong JSON type or a null where a default exists is an
 * error.  A NULL options is '{}'.  On a 0.17.0 catalog, whose type has the
 * first ten options only, the others are refused.
 */
Datum
unlearn_train_options(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[lengthof(train_options)];
	bool		nulls[lengthof(train_options)];
	bool		given[lengthof(train_options)] = {0};
	int			i;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE ||
		desc->natts > lengthof(train_options) || desc->natts < OPTIONS_OF_0_17_0)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("unlearn.train_options does not match this library"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
	desc = BlessTupleDesc(desc);

	if (!PG_ARGISNULL(0))
	{
		Jsonb	   *options = PG_GETARG_JSONB_P(0);
		JsonbIterator *it;
		JsonbIteratorToken token;
		JsonbValue	key;
		JsonbValue	v;

		if (!JB_ROOT_IS_OBJECT(options))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("options of unlearn_train must be a JSON object"),
					 errhint("For example: options => '{\"nulls\": \"error\"}'.")));
		it = JsonbIteratorInit(&options->root);
		while ((token = JsonbIteratorNext(&it, &key, true)) != WJB_DONE)
		{
			char	   *name;

			if (token != WJB_KEY)
				continue;
			name = pnstrdup(key.val.string.val, key.val.string.len);
			token = JsonbIteratorNext(&it, &v, true);
			Assert(token == WJB_VALUE);
			for (i = 0; i < lengthof(train_options); i++)
				if (strcmp(name, train_options[i].name) == 0)
					break;
			if (i == lengthof(train_options))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unlearn_train has no option \"%s\"", name),
						 errhint("The options are: " OPTION_NAMES ".")));
			if (i >= desc->natts)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("option \"%s\" needs a newer unlearn catalog", name),
						 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
			values[i] = option_value(&train_options[i], &v, &nulls[i]);
			given[i] = true;
		}
	}
	for (i = 0; i < lengthof(train_options); i++)
		if (!given[i])
			values[i] = option_default(&train_options[i], &nulls[i]);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
