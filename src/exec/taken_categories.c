/*-------------------------------------------------------------------------
 *
 * taken_categories.c
 *	  Categories taken from the rows: a feature category(column) without a
 *	  list is the one-hot group (category_group_texts) of the distinct
 *	  non-null values the model's rows have in the column.
 *
 * The categories are public, like classes taken from the rows: they are
 * in unlearn.models.features.  So they always are exactly the values the
 * model's rows have: each training takes them afresh from the rows it
 * reads (take_categories), and a change after which a category has no row
 * left, or a row has a value that is no category, retrains the model
 * (taken_categories_retrain_reason).
 *
 * - A category's rows are counted from the column sums of the standardize
 *   map (column_value_sum): a taken category needs that map.
 * - A row that enters with the group's "other" feature set (a null, or a
 *   new value) makes one query over the model's rows look for a non-null
 *   value that is no category: O(n) for such a statement.
 * - The categories are read as the table's owner, like every row.
 * - Immediate removal only: a queued row (deferred, async) is encoded with
 *   the categories of its time, which a retrain may change.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* most categories one taken column may have, and the longest (bytes) */
#define MAX_TAKEN_CATEGORIES 1000
#define MAX_TAKEN_CATEGORY_BYTES 200

/*
 * Refuse a model that cannot keep taken categories true: it must keep the
 * column sums of the standardize map, which Noisy-GD does not.
 */
void
check_taken_categories(UnlearnModel *m)
{
	if (!catalog_has_taken_categories())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("categories taken from the rows need version 0.22.0 of the unlearn catalog"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE, or declare the categories.")));
	if (m->def.deferred)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" cannot take categories from its rows with removal \"%s\"",
						m->def.name, m->def.async_apply ? "async" : "deferred"),
				 errdetail("Queued rows are encoded with the categories of their time, which a retrain of the model may change."),
				 errhint("Declare the categories: category(column, '{a,b,...}').")));
	if (m->def.preprocess != PREPROCESS_STANDARDIZE || !MODEL_KEEPS_STATE(m))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" cannot take categories from its rows", m->def.name),
				 errdetail("Categories taken from the rows are counted with the sums of the \"standardize\" map, which mechanism \"noisy_gd\" and the maps \"declared\" and \"none\" do not keep."),
				 errhint("Declare the categories: category(column, '{a,b,...}').")));
}

/*
 * The model's table, and in cond the condition of its rows: the filter
 * first, in one CASE with the rest (append_model_row_condition), so that
 * nothing else of the model's is evaluated for a row the filter leaves out.
 */
static char *
model_rows_query(UnlearnModel *m, StringInfo cond)
{
	initStringInfo(cond);
	append_model_row_condition(m, cond, 1, false);
	return relation_qualified_name(m->def.source);
}

/*
 * The distinct non-null values the model's rows have in column, in the
 * type's order (text bytewise), as canonical text (NULL for one longer
 * than MAX_TAKEN_CATEGORY_BYTES): at most MAX_TAKEN_CATEGORIES + 1 of
 * them.  Read as the table's owner.
 */
static char **
distinct_values(UnlearnModel *m, const char *column, Oid type, int *n)
{
	StringInfoData cond;
	char	   *rows = model_rows_query(m, &cond);
	bool		text = type == TEXTOID || type == VARCHAROID || type == BPCHAROID;
	ExtensionContext ctx;
	char	  **out;
	uint64		i;

	enter_table_owner_context(m->def.source, &ctx);
	if (execute_with_model_condition(m, psprintf("SELECT CASE WHEN pg_catalog.octet_length(d.v::pg_catalog.text) <= %d "
									   "THEN d.v::pg_catalog.text END AS category "
									   "FROM (SELECT DISTINCT %s AS v "
									   "FROM %s WHERE %s IS NOT NULL AND %s) AS d ORDER BY %s LIMIT %d",
									   MAX_TAKEN_CATEGORY_BYTES, quote_identifier(column), rows,
									   quote_identifier(column), cond.data,
									   text ? "d.v::pg_catalog.text COLLATE \"C\"" : "d.v",
									   MAX_TAKEN_CATEGORIES + 1), 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the categories of column \"%s\"", column);
	leave_extension_context(&ctx);
	*n = (int) SPI_processed;
	out = palloc(sizeof(char *) * Max(*n, 1));
	for (i = 0; i < SPI_processed; i++)
	{
		char	   *value = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

		/* a value longer than MAX_TAKEN_CATEGORY_BYTES: none read */
		out[i] = value == NULL ? NULL : category_value(value, type, column, m->def.name);
	}
	return out;
}

/* replace m's features [first, first + old) by the texts (boolean expressions) */
static void
replace_features(UnlearnModel *m, int first, int old, List *texts)
{
	int			n = m->def.nfeatures - old + list_length(texts);
	char	  **features = palloc(sizeof(char *) * n);
	bool	   *is_expression = palloc(sizeof(bool) * n);
	Oid		   *types = palloc(sizeof(Oid) * (n + 1));
	ListCell   *lc;
	int			i,
				k = 0;

	for (i = 0; i < first; i++, k++)
	{
		features[k] = m->def.features[i];
		is_expression[k] = feature_is_expression(m, i);
		types[k] = m->def.column_types[i];
	}
	foreach(lc, texts)
	{
		Oid			type;
		Node	   *expr = feature_expr_parse(lfirst(lc), m->def.source, m->def.name, false, &type);

		features[k] = feature_expr_canonical(expr, m->def.source);
		is_expression[k] = true;
		types[k++] = type;
	}
	for (i = first + old; i <= m->def.nfeatures; i++, k++)
	{
		if (i < m->def.nfeatures)
		{
			features[k] = m->def.features[i];
			is_expression[k] = feature_is_expression(m, i);
		}
		types[k] = m->def.column_types[i];	/* the label's last */
	}
	m->def.features = features;
	m->def.is_expression = is_expression;
	m->def.column_types = types;
	m->def.nfeatures = n;
	m->def.dims = n;
	m->def.p = n + (m->def.intercept ? 1 : 0);
	/* every buffer sized by p goes: a training or a rest makes them anew */
	m->released.coef = palloc0(sizeof(double) * m->released.nclasses * m->def.p);
	m->released.published = NULL;
	m->state.weights = NULL;
	m->state.noise = NULL;
	m->state.anchor = NULL;
	m->state.factor = NULL;
	m->state.gram = NULL;
	m->state.column_sums = NULL;
	m->def.centre = NULL;
	m->def.spread = NULL;
	m->call.category_groups = NULL;
	m->call.taken_groups = NULL;
	m->call.feature_base_types = NULL;
	m->call.features_retaken = true;
}

/*
 * Take the categories of m's taken columns afresh from its rows, before
 * a training reads them: each group becomes the one of the values the rows
 * have now, and m->call.features_retaken says whether any changed (the
 * catalog then writes the features).  Returns false if a column has more
 * than MAX_TAKEN_CATEGORIES values or one longer than
 * MAX_TAKEN_CATEGORY_BYTES (every trigger parses the features), or the
 * model would have more than UNLEARN_MAX_DIMS features; the groups taken
 * before it stay, and the caller suspends the model, which forgets them.
 */
bool
take_categories(UnlearnModel *m)
{
	int			t;

	m->call.categories_taken = true;
	for (t = 0; t < m->def.ntaken; t++)
	{
		const char *column = m->def.taken_columns[t];
		Oid			type = category_column_type(m->def.source, column, column, m->def.name);
		int			first,
					n,
					k,
					i;
		char	  **old;
		char	  **now = distinct_values(m, column, type, &k);
		bool		same;

		if (!category_group_of_column(m, column, true, &first, &old, &n))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" has no one-hot group of column \"%s\", whose categories it takes from its rows",
							m->def.name, column),
					 errhint("Train the model again with unlearn_train(..., replace => true).")));
		if (k > MAX_TAKEN_CATEGORIES || m->def.nfeatures - n + k > UNLEARN_MAX_DIMS)
			return false;
		for (i = 0; i < k; i++)
			if (now[i] == NULL)
				return false;
		same = n == k;
		for (i = 0; same && i < n; i++)
			same = strcmp(old[i], now[i]) == 0;
		if (same)
			continue;
		replace_features(m, first, n + 1, category_group_texts(column, type, now, k));
	}
	return true;
}

/*
 * A model that releases nothing (too few rows, suspended) keeps no taken
 * category either: each group becomes "other" alone, without reading a
 * table whose rows may be what stopped the model.  Its next training takes
 * them afresh.
 */
void
taken_categories_forget(UnlearnModel *m)
{
	int			t;

	for (t = 0; t < m->def.ntaken; t++)
	{
		const char *column = m->def.taken_columns[t];
		int			first,
					n;
		char	  **old;

		if (category_group_of_column(m, column, true, &first, &old, &n) && n > 0)
			replace_features(m, first, n + 1,
							 category_group_texts(column,
												  category_column_type(m->def.source, column, column,
																	   m->def.name),
												  NULL, 0));
	}
}

/*
 * The first feature and the number of categories of each taken column's
 * group (2 per column; -1 if it has none), found once per call of m by its
 * "other" alone: the statements' path (take_categories, at training,
 * compares the whole group).
 */
static const int *
taken_groups(UnlearnModel *m)
{
	int			t;

	if (m->call.taken_groups != NULL)
		return m->call.taken_groups;
	m->call.taken_groups = MemoryContextAlloc(GetMemoryChunkContext(m), sizeof(int) * 2 * m->def.ntaken);
	for (t = 0; t < m->def.ntaken; t++)
	{
		char	  **categories;

		if (!category_group_of_column(m, m->def.taken_columns[t], false, &m->call.taken_groups[2 * t],
									  &categories, &m->call.taken_groups[2 * t + 1]))
			m->call.taken_groups[2 * t] = m->call.taken_groups[2 * t + 1] = -1;
	}
	return m->call.taken_groups;
}

/*
 * Whether the raw row x (m->def.p values) has the "other" feature of a
 * taken group set: a null, or a value that may be no category.  A change
 * that leaves such a row's features as they were (null to a new value)
 * is still looked at for it.
 */
bool
taken_other_set(UnlearnModel *m, const double *x)
{
	const int  *g;
	int			t;

	if (m->def.ntaken == 0)
		return false;
	g = taken_groups(m);
	for (t = 0; t < m->def.ntaken; t++)
		if (g[2 * t] >= 0 && x[g[2 * t] + g[2 * t + 1]] != 0.0)
			return true;
	return false;
}

/*
 * Whether a row of the model has a non-null value of column that is no
 * category of its group ("other", the group's last feature, is true):
 * one query over the model's rows, as the table's owner.
 */
static bool
rows_have_new_value(UnlearnModel *m, const char *column, int other)
{
	StringInfoData cond;
	char	   *rows = model_rows_query(m, &cond);
	ExtensionContext ctx;
	bool		isnull;
	bool		found;

	enter_table_owner_context(m->def.source, &ctx);
	if (execute_with_model_condition(m, psprintf("SELECT EXISTS (SELECT FROM %s WHERE %s IS NOT NULL AND %s AND %s)",
												 rows, quote_identifier(column), m->def.features[other],
												 cond.data), 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the categories of column \"%s\"", column);
	found = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	leave_extension_context(&ctx);
	return found && !isnull;
}

/*
 * After a change of m's rows (its column sums already taken forward to
 * rows_after rows; added: the raw rows that entered, or NULL;
 * other_entered: a row entered with a taken group's "other" set, though
 * not in added, see taken_other_set), why m must retrain for its taken
 * categories, or NULL: a category has no row left, or a row that entered
 * has a value that is no category.
 */
const char *
taken_categories_retrain_reason(UnlearnModel *m, int64 rows_after, const RowBatch *added,
								bool other_entered)
{
	const int  *g;
	int			t,
				i;

	if (m->def.ntaken == 0 || m->state.column_sums == NULL)
		return NULL;
	g = taken_groups(m);
	for (t = 0; t < m->def.ntaken; t++)
	{
		if (g[2 * t] < 0)
			return "The model has no one-hot group of a column whose categories it takes from its rows.";
		for (i = 0; i < g[2 * t + 1]; i++)
			if (column_value_sum(m, g[2 * t] + i, rows_after) < 0.5)
				return "A category taken from the rows lost its last row.";
	}
	for (i = 0; added != NULL && i < added->count && !other_entered; i++)
		other_entered = taken_other_set(m, added->x + (Size) i * m->def.p);
	for (t = 0; other_entered && t < m->def.ntaken; t++)
		if (rows_have_new_value(m, m->def.taken_columns[t], g[2 * t] + g[2 * t + 1]))
			return "A row brings a new category to a column whose categories are taken from the rows.";
	return NULL;
}
