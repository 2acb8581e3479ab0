/*-------------------------------------------------------------------------
 *
 * features.c
 *	  From table columns to feature values: column resolution and value
 *	  checks.
 *
 * The row map itself is in column_map.c.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/primnodes.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

/* are all of raw[0 .. d) finite? */
bool
feature_values_finite(const double *raw, int d)
{
	double		probe0 = 0.0,
				probe1 = 0.0,
				probe2 = 0.0,
				probe3 = 0.0;
	int			j;

	/*
	 * x * 0 is 0 for a finite x and NaN for an infinite or NaN one; four
	 * independent sums, so that the loop is not one chain of additions
	 */
	for (j = 0; j + 3 < d; j += 4)
	{
		probe0 += raw[j] * 0.0;
		probe1 += raw[j + 1] * 0.0;
		probe2 += raw[j + 2] * 0.0;
		probe3 += raw[j + 3] * 0.0;
	}
	for (; j < d; j++)
		probe0 += raw[j] * 0.0;
	return (probe0 + probe1) + (probe2 + probe3) == 0.0;
}

void
check_feature_values(const double *raw, int d, const char *model)
{
	int			j;

	if (feature_values_finite(raw, d))
		return;
	for (j = 0; j < d; j++)
	{
		if (isnan(raw[j]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("NaN not allowed in features of model \"%s\"", model),
					 errdetail("Feature %d is NaN.", j + 1),
					 errhint("Remove or fix the row: features must be finite numbers.")));
		if (isinf(raw[j]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("infinite value not allowed in features of model \"%s\"", model),
					 errdetail("Feature %d is infinite.", j + 1),
					 errhint("Remove or fix the row: features must be finite numbers.")));
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
 * Replace each category(column, '{...}') among the n features by the
 * feature expressions it stands for (category_feature_texts), and each
 * category(column) by the group of no category yet (only "other"), the
 * column then named in m->def.taken_columns: take_categories fills it in
 * from the rows the training reads.
 */
static void
expand_category_features(UnlearnModel *m, Oid relid, Datum **elems, bool **nulls, int *n)
{
	List	   *texts = NIL;
	List	   *taken = NIL;
	bool		any = false;
	ListCell   *lc;
	int			i;

	for (i = 0; i < *n; i++)
	{
		char	   *column = NULL;
		List	   *one = (*nulls)[i] ? NIL :
			category_feature_texts(TextDatumGetCString((*elems)[i]), relid, m->def.name, &column);

		if (column != NULL)
		{
			foreach(lc, taken)
				if (strcmp(lfirst(lc), column) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("model \"%s\" takes the categories of column \"%s\" twice",
									m->def.name, column)));
			taken = lappend(taken, column);
			one = category_group_texts(column, category_column_type(relid, column, column, m->def.name),
									   NULL, 0);
		}
		if (one == NIL)
			texts = lappend(texts, (*nulls)[i] ? NULL : TextDatumGetCString((*elems)[i]));
		else
		{
			texts = list_concat(texts, one);
			any = true;
		}
	}
	/* a taken column has no other one-hot group */
	foreach(lc, taken)
	{
		char	   *prefix = psprintf("NOT COALESCE(%s = ANY (", quote_identifier(lfirst(lc)));
		ListCell   *lc2;
		int			groups = 0;

		foreach(lc2, texts)
			if (lfirst(lc2) != NULL && strncmp(lfirst(lc2), prefix, strlen(prefix)) == 0)
				groups++;
		if (groups > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model \"%s\" both declares and takes the categories of column \"%s\"",
							m->def.name, (char *) lfirst(lc)),
					 errhint("Keep one: category(%s) or category(%s, '{...}').",
							 quote_identifier(lfirst(lc)), quote_identifier(lfirst(lc)))));
	}
	if (taken != NIL)
	{
		m->def.ntaken = list_length(taken);
		m->def.taken_columns = palloc(sizeof(char *) * m->def.ntaken);
		i = 0;
		foreach(lc, taken)
			m->def.taken_columns[i++] = lfirst(lc);
		check_taken_categories(m);
	}
	if (!any)
		return;
	if (list_length(texts) > UNLEARN_MAX_DIMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" would have %d features, more than %d", m->def.name,
						list_length(texts), UNLEARN_MAX_DIMS)));
	*n = list_length(texts);
	*elems = palloc(sizeof(Datum) * *n);
	*nulls = palloc0(sizeof(bool) * *n);
	i = 0;
	foreach(lc, texts)
	{
		if (lfirst(lc) == NULL)
			(*nulls)[i] = true; /* refused below */
		else
			(*elems)[i] = CStringGetTextDatum((char *) lfirst(lc));
		i++;
	}
}

/*
 * Resolve label and feature columns of a new model: checks that they exist
 * and have usable types, and records their types.  A feature
 * category(column, '{...}') becomes one boolean expression per category
 * and one for "other".
 */
void
resolve_features(UnlearnModel *m, Oid relid, ArrayType *features, const char *label)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	Oid			ltype;
	bool		is_array;

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
	expand_category_features(m, relid, &elems, &nulls, &n);

	m->def.nfeatures = n;
	m->def.features = palloc(sizeof(char *) * n);
	m->def.is_expression = NULL;
	m->def.column_types = palloc(sizeof(Oid) * (n + 1));
	for (i = 0; i < n; i++)
	{
		Oid			t;
		const char *what = "feature column";

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("feature column names must not be null")));
		m->def.features[i] = TextDatumGetCString(elems[i]);
		if (strcmp(m->def.features[i], label) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("label column \"%s\" cannot also be a feature", label)));
		if (get_attnum(relid, m->def.features[i]) > 0)
			t = column_type_or_error(relid, m->def.features[i]);
		else
		{
			Node	   *expr = feature_expr_parse(m->def.features[i], relid, m->def.name,
													  !model_owner_owns_table(m), &t);

			if (IsA(expr, Var))
				m->def.features[i] = get_attname(relid, ((Var *) expr)->varattno, false);
			else
			{
				if (!catalog_has_expressions())
					ereport(ERROR,
							(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							 errmsg("feature expressions need version 0.6.0 of the unlearn catalog"),
							 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
				if (m->def.is_expression == NULL)
					m->def.is_expression = palloc0(sizeof(bool) * n);
				m->def.is_expression[i] = true;
				m->def.features[i] = feature_expr_canonical(expr, relid);
				what = "feature expression";
			}
		}
		m->def.column_types[i] = t;
		if (!feature_type_supported(t, &is_array) || (is_array && n > 1))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("%s \"%s\" has type %s, which is not numeric",
							what, m->def.features[i], format_type_be(t)),
					 errhint("Features are columns or expressions of a built-in numeric, boolean, date or timestamp type, or a single array of a numeric type.")));
		m->def.feature_array = is_array;
	}
	if (!m->def.feature_array)
		m->def.dims = n;

	ltype = column_type_or_error(relid, label);
	m->def.column_types[n] = ltype;
	if (m->def.loss == LOSS_SQUARED && !label_type_supported(ltype, LOSS_SQUARED))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("label column \"%s\" has type %s, but squared loss needs a numeric label",
						label, format_type_be(ltype)),
				 errhint("Labels of squared loss are columns of a built-in numeric type.")));
	if (!label_type_supported(ltype, m->def.loss))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("label column \"%s\" has type %s, which unlearn cannot read as a label",
						label, format_type_be(ltype)),
				 errdetail("Labels are read in binary, so that they mean the same in every session and no user-defined code runs while models are maintained."),
				 errhint("Use a boolean, integer, numeric, float or text label column, for example a generated column.")));
}

/*
 * Set m's row filter from its text (NULL: none): a boolean expression over
 * the rows of relid, under the rules of feature expressions (linear cost
 * only, unless the model's owner owns the table), kept as canonical text.
 */
void
resolve_filter(UnlearnModel *m, Oid relid, const char *text)
{
	Node	   *expr;
	Oid			type;

	m->def.filter = NULL;
	if (text == NULL)
		return;
	if (!catalog_has_row_filters())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("row filters need version 0.20.0 of the unlearn catalog"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
	expr = filter_expr_parse(text, relid, m->def.name, !model_owner_owns_table(m), &type);
	if (type != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the filter of model \"%s\" has type %s, not boolean", m->def.name,
						format_type_be(type)),
				 errhint("A filter is a boolean expression over the row, such as region = 'eu' AND active.")));
	m->def.filter = feature_expr_canonical(expr, relid);
}

/*
 * Check that the model's columns are still there with the types it was
 * trained on, its row filter still a boolean expression over them, and its
 * cohort column by its name.  Errors name the model and the column.
 */
void
verify_source_columns(UnlearnModel *m)
{
	int			i;

	for (i = 0; i <= m->def.nfeatures; i++)
	{
		const char *col = i < m->def.nfeatures ? m->def.features[i] : m->def.label;
		AttrNumber	attnum;
		Oid			type;

		if (i < m->def.nfeatures && feature_is_expression(m, i))
		{
			ListCell   *lc;

			foreach(lc, feature_column_names(m, i))
				if (get_attnum(m->def.source, strVal(lfirst(lc))) <= 0)
					ereport(ERROR,
							(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
							 errmsg("model \"%s\" depends on column \"%s\" of table \"%s\" through feature expression \"%s\"",
									m->def.name, strVal(lfirst(lc)), get_rel_name(m->def.source), col),
							 errhint("Drop the model with unlearn_drop('%s') first, then retrain it on the new table.",
									 m->def.name)));
			(void) feature_expr_parse(col, m->def.source, m->def.name, false, &type);
		}
		else
		{
			attnum = get_attnum(m->def.source, col);
			type = attnum == InvalidAttrNumber ? InvalidOid : get_atttype(m->def.source, attnum);
		}
		if (type != m->def.column_types[i])
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("model \"%s\" depends on %s \"%s\" of table \"%s\" with type %s",
							m->def.name, i < m->def.nfeatures && feature_is_expression(m, i) ?
							"feature expression" : "column",
							col, get_rel_name(m->def.source),
							format_type_be(m->def.column_types[i])),
					 errhint("Drop the model with unlearn_drop('%s') first, then retrain it on the new table.",
							 m->def.name)));
	}
	if (m->def.filter != NULL)
	{
		ListCell   *lc;

		foreach(lc, feature_expr_column_names(m->def.filter, m->def.name))
			if (get_attnum(m->def.source, strVal(lfirst(lc))) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("model \"%s\" depends on column \"%s\" of table \"%s\" through its filter",
								m->def.name, strVal(lfirst(lc)), get_rel_name(m->def.source)),
						 errhint("Drop the model with unlearn_drop('%s') first, then retrain it on the new table.",
								 m->def.name)));
		(void) model_filter_parse(m, m->def.source);
	}
	/* the cohort column keeps its name (a rename would let another column take it) */
	if (m->def.cohort != NULL)
	{
		AttrNumber	attnum = get_attnum(m->def.source, m->def.cohort);

		if (attnum == InvalidAttrNumber ||
			!cohort_type_supported(get_atttype(m->def.source, attnum)))
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("model \"%s\" depends on cohort column \"%s\" of table \"%s\"",
							m->def.name, m->def.cohort, get_rel_name(m->def.source)),
					 errhint("Drop the model with unlearn_drop('%s') first, then retrain it on the new table.",
							 m->def.name)));
	}
}

/*
 * Every column m reads: its label, its feature columns, the columns its
 * feature expressions and its row filter read (a name may repeat), and its
 * cohort column.
 */
List *
model_read_columns(UnlearnModel *m)
{
	List	   *names = list_make1(makeString(m->def.label));
	int			j;

	for (j = 0; j < m->def.nfeatures; j++)
		names = list_concat(names, feature_column_names(m, j));
	if (m->def.filter != NULL)
		names = list_concat(names, feature_expr_column_names(m->def.filter, m->def.name));
	if (m->def.cohort != NULL)
		names = lappend(names, makeString(m->def.cohort));
	return names;
}

/* does m read the column? */
bool
model_reads_column(UnlearnModel *m, const char *column)
{
	ListCell   *lc;

	foreach(lc, model_read_columns(m))
		if (strcmp(strVal(lfirst(lc)), column) == 0)
			return true;
	return false;
}

/*
 * Refuse a DDL command that changes the values of a column m reads without
 * passing through the table's triggers (a retype, even to the same type:
 * USING can rewrite every value, a smaller typmod rounds them; a drop, even
 * when a column of the same name is added in the same statement).
 */
void
refuse_column_change(UnlearnModel *m, const char *column, const char *change)
{
	if (model_reads_column(m, column))
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot %s column \"%s\" of table \"%s\": model \"%s\" reads it",
						change, column, get_rel_name(m->def.source), m->def.name),
				 errdetail("The rows' values would change without passing through the model's triggers."),
				 errhint("Drop the model with unlearn_drop('%s') first, then retrain it on the new table.",
						 m->def.name)));
}

/*
 * Point m's column types at those of another relation (to score or to
 * evaluate on), which must have every feature column, and the label if
 * with_label, with a type unlearn reads of the same shape.
 */
void
bind_relation_columns(UnlearnModel *m, Oid relid, bool with_label)
{
	int			i;

	m->call.feature_base_types = NULL;

	for (i = 0; i <= m->def.nfeatures; i++)
	{
		const char *col = i < m->def.nfeatures ? m->def.features[i] : m->def.label;
		AttrNumber	attnum;
		Oid			t;
		bool		fits;

		if (i == m->def.nfeatures && !with_label)
			break;
		if (i < m->def.nfeatures && feature_is_expression(m, i))
		{
			Oid			stored = m->def.column_types[i];

			(void) feature_expr_parse(col, relid, m->def.name, false, &t);
			if (t != stored)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("feature expression \"%s\" has type %s over relation \"%s\", not %s as in model \"%s\"",
								col, format_type_be(t), get_rel_name(relid),
								format_type_be(stored), m->def.name),
						 errhint("The relation's columns need the types of the model's table.")));
			continue;
		}
		attnum = get_attnum(relid, col);
		t = attnum == InvalidAttrNumber || attnum < 0 ? InvalidOid : get_atttype(relid, attnum);
		if (!OidIsValid(t))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							col, get_rel_name(relid)),
					 errhint("The relation needs every %scolumn of model \"%s\".",
							 with_label ? "feature and label " : "feature ", m->def.name)));
		if (i < m->def.nfeatures)
			fits = feature_type_fits(m, t);
		else
			fits = label_type_supported(t, m->def.loss);
		if (!fits)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of relation \"%s\" has type %s, which does not fit model \"%s\"",
							col, get_rel_name(relid), format_type_be(t), m->def.name)));
		m->def.column_types[i] = t;
	}
}
