/*-------------------------------------------------------------------------
 *
 * feature_expr.c
 *	  Feature expressions: a feature computed from the row, such as
 *	  log(income), age * age or colour = 'red'.
 *
 * An expression is parsed against the trained table with search_path
 * pinned to pg_catalog (and the settings that change what a constant's
 * text means pinned too: pin_expression_settings), and accepted only if
 * every function and operator it calls is built in and immutable (so
 * none can be dropped or made again), every type and collation it
 * touches is built in, and it reads nothing but the row's own columns: no
 * subquery, no aggregate, no system column, no whole-row reference, no
 * cast through a type's text form (whose output depends on settings).  So no code that
 * a non-superuser can define runs when the expression is evaluated, and
 * it means the same for every role and session.
 *
 * The catalog keeps the expression's canonical text (deparsed from the
 * checked tree).  That text is parsed again, by the same rules, wherever
 * rows are read:
 *	- in SQL (training, counts, evaluation), as "(text)" in the select
 *	  list, run under the same pinned settings;
 *	- in C (the triggers' transition rows, unlearn_score_row), by an
 *	  evaluator over a slot of the relation's row type, its columns found
 *	  by name.
 * Both build the same tree from the same text, so a row's features are the
 * same at training, removal, addition and prediction.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/relation.h"
#include "access/transam.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_collate.h"
#include "parser/parse_expr.h"
#include "parser/parse_node.h"
#include "parser/parse_relation.h"
#include "parser/parser.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#define EXPRESSION_RULE_HINT \
	"Feature expressions may use the row's columns, constants, built-in immutable functions and operators, CASE, COALESCE, NULLIF, GREATEST, LEAST, IN, IS [NOT] NULL and COLLATE."

typedef struct ExprErrorContext
{
	const char *text;
	const char *model;
	const char *what;			/* "feature expression" or "filter" */
} ExprErrorContext;

static void
expression_error_context(void *arg)
{
	ExprErrorContext *c = (ExprErrorContext *) arg;

	errcontext("%s \"%s\" of model \"%s\"", c->what, c->text, c->model);
}

/*
 * the raw tree of one expression: "SELECT <text>" must hold nothing else;
 * what is "feature expression" or "filter"
 */
static Node *
raw_expression(const char *text, const char *model, const char *what)
{
	int			level;
	List	   *stmts;
	SelectStmt *select;
	ResTarget  *target;

	/* the lexer reads string escapes by standard_conforming_strings */
	level = pin_expression_settings();
	stmts = raw_parser(psprintf("SELECT %s", text), RAW_PARSE_DEFAULT);
	unpin_expression_settings(level);

	if (list_length(stmts) == 1 && IsA(linitial_node(RawStmt, stmts)->stmt, SelectStmt))
	{
		select = (SelectStmt *) linitial_node(RawStmt, stmts)->stmt;
		if (select->op == SETOP_NONE && list_length(select->targetList) == 1 &&
			select->distinctClause == NIL && select->intoClause == NULL &&
			select->fromClause == NIL && select->whereClause == NULL &&
			select->groupClause == NIL && select->havingClause == NULL &&
			select->windowClause == NIL && select->valuesLists == NIL &&
			select->sortClause == NIL && select->limitOffset == NULL &&
			select->limitCount == NULL && select->lockingClause == NIL &&
			select->withClause == NULL)
		{
			target = linitial_node(ResTarget, select->targetList);
			if (target->name == NULL &&
				!(IsA(target->val, ColumnRef) &&
				  IsA(llast(((ColumnRef *) target->val)->fields), A_Star)))
				return target->val;
		}
	}
	if (strcmp(what, "filter") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("filter \"%s\" of model \"%s\" is not one expression", text, model),
				 errhint("A filter is one boolean expression over the row's columns, such as region = 'eu' AND active.")));
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("feature \"%s\" of model \"%s\" is neither a column nor one expression",
					text, model),
			 errhint("A feature is a column name or one scalar expression over the row's columns, such as log(income).")));
	return NULL;				/* keep compiler quiet */
}

typedef struct ColumnNames
{
	List	   *names;
	const char *text;
	const char *model;
	const char *what;
} ColumnNames;

static bool
collect_column_refs(Node *node, ColumnNames *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, ColumnRef))
	{
		ColumnRef  *ref = (ColumnRef *) node;

		if (list_length(ref->fields) != 1 || !IsA(linitial(ref->fields), String))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
					 errmsg("%s \"%s\" of model \"%s\" must name columns without a table or a star",
							c->what, c->text, c->model),
					 errhint(EXPRESSION_RULE_HINT)));
		c->names = list_append_unique(c->names, linitial(ref->fields));
		return false;
	}
	if (IsA(node, SubLink))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s \"%s\" of model \"%s\" must not hold a subquery",
						c->what, c->text, c->model),
				 errhint(EXPRESSION_RULE_HINT)));
	return raw_expression_tree_walker(node, collect_column_refs, (void *) c);
}

/* most categories one category() feature declares */
#define MAX_CATEGORIES 1000

/*
 * A declared category as the column of base type type reads it: an integer
 * or boolean in its canonical text, a char(n) value without trailing
 * spaces, text and varchar as given; an error names the feature, never a
 * row.  Two categories of the same canonical text are one.
 */
char *
category_value(const char *value, Oid type, const char *feature, const char *model)
{
	bool		b;
	int64		v;
	char	   *end;
	size_t		len;

	switch (type)
	{
		case BOOLOID:
			if (!parse_bool(value, &b))
				break;
			return pstrdup(b ? "true" : "false");
		case INT2OID:
		case INT4OID:
		case INT8OID:
			errno = 0;
			v = strtoi64(value, &end, 10);
			if (errno != 0 || end == value || *end != '\0' ||
				(type == INT2OID && (v < PG_INT16_MIN || v > PG_INT16_MAX)) ||
				(type == INT4OID && (v < PG_INT32_MIN || v > PG_INT32_MAX)))
				break;
			return psprintf(INT64_FORMAT, v);
		case BPCHAROID:
			len = strlen(value);
			while (len > 0 && value[len - 1] == ' ')
				len--;
			return pnstrdup(value, len);
		default:
			return pstrdup(value);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("a category of feature \"%s\" of model \"%s\" is not a value of type %s",
					feature, model, format_type_be(type)),
			 errhint("Declare the categories as values of the column's type.")));
	return NULL;				/* keep compiler quiet */
}

/* the SQL type name of a category() group's constant array */
static const char *
category_array_type(Oid type)
{
	return type == INT2OID ? "int2" : type == INT4OID ? "int4" :
		type == INT8OID ? "int8" : type == BOOLOID ? "bool" : "text";
}

/*
 * The feature expressions of a one-hot group of the column (of base type
 * type) over its n distinct canonical categories, in order: for each
 * category c, "COALESCE(column = 'c', false)", then "other", "NOT
 * COALESCE(column = ANY ('{a,...}'::T[]), false)" with T the column's type
 * (text for text, varchar and char), 1 for a null or any other value.
 */
List *
category_group_texts(const char *column, Oid type, char **canonical, int n)
{
	StringInfoData other;
	List	   *out = NIL;
	int			i,
				j;

	/*
	 * "other": no category matched, one test against a constant array of the
	 * column's type (hashed from 9 elements on)
	 */
	initStringInfo(&other);
	appendStringInfoChar(&other, '{');
	for (i = 0; i < n; i++)
	{
		out = lappend(out, psprintf("COALESCE(%s = %s, false)", quote_identifier(column),
									quote_literal_cstr(canonical[i])));
		appendStringInfoString(&other, i > 0 ? ",\"" : "\"");
		for (j = 0; canonical[i][j] != '\0'; j++)
		{
			if (canonical[i][j] == '"' || canonical[i][j] == '\\')
				appendStringInfoChar(&other, '\\');
			appendStringInfoChar(&other, canonical[i][j]);
		}
		appendStringInfoChar(&other, '"');
	}
	appendStringInfoChar(&other, '}');
	return lappend(out, psprintf("NOT COALESCE(%s = ANY (%s::%s[]), false)", quote_identifier(column),
								 quote_literal_cstr(other.data), category_array_type(type)));
}

/*
 * The base type of a column a category() feature encodes: text, varchar,
 * char, boolean or an integer type; an error names the feature.
 */
Oid
category_column_type(Oid relid, const char *column, const char *feature, const char *model)
{
	AttrNumber	attnum = get_attnum(relid, column);
	Oid			type;

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist", column, get_rel_name(relid)),
				 errcontext("feature \"%s\" of model \"%s\"", feature, model)));
	type = getBaseType(get_atttype(relid, attnum));
	if (type != TEXTOID && type != VARCHAROID && type != BPCHAROID && type != BOOLOID &&
		type != INT2OID && type != INT4OID && type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of a category feature of model \"%s\" has type %s", column, model,
						format_type_be(type)),
				 errhint("category() encodes a text, varchar, char, boolean or integer column.")));
	return type;
}

/*
 * category(column, '{a,b,...}'): one-hot encoding of a column, declared
 * by its categories.  When feature is such a call, the feature expressions
 * it stands for (category_group_texts); when it is category(column), the
 * categories are taken from the rows: NIL, and *taken the column's name;
 * else NIL.  The column must be of a text, boolean or integer type
 * (compared in its own type, built-in operators), and the categories a
 * one-dimensional text array of distinct non-null values.
 */
List *
category_feature_texts(const char *feature, Oid relid, const char *model, char **taken)
{
	Node	   *raw;
	FuncCall   *call;
	ColumnRef  *ref;
	A_Const    *cats;
	const char *column;
	Oid			type;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *nulls;
	int			n,
				i,
				j;
	char	  **canonical;

	*taken = NULL;
	if (pg_strncasecmp(feature, "category", 8) != 0)
		return NIL;
	raw = raw_expression(feature, model, "feature expression");
	if (!IsA(raw, FuncCall))
		return NIL;
	call = (FuncCall *) raw;
	if (list_length(call->funcname) != 1 ||
		strcmp(strVal(linitial(call->funcname)), "category") != 0)
		return NIL;
	if (list_length(call->args) < 1 || list_length(call->args) > 2 || call->agg_order != NIL ||
		call->agg_filter != NULL || call->over != NULL || call->agg_star || call->agg_distinct ||
		call->func_variadic)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("feature \"%s\" of model \"%s\" must be category(column) or category(column, '{category, ...}')",
						feature, model),
				 errhint("Declare the categories, category(region, '{north,south,east}'), or take them from the rows, category(region); a value that is none of them, or null, is the feature \"other\".")));
	ref = (ColumnRef *) linitial(call->args);
	cats = list_length(call->args) == 2 ? (A_Const *) lsecond(call->args) : NULL;
	if (!IsA(ref, ColumnRef) || list_length(ref->fields) != 1 || !IsA(linitial(ref->fields), String) ||
		(cats != NULL && (!IsA(cats, A_Const) || cats->isnull || !IsA(&cats->val, String))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("feature \"%s\" of model \"%s\" must name a column and give its categories as a text array literal",
						feature, model),
				 errhint("For example category(region, '{north,south,east}'), or category(region) to take them from the rows.")));
	column = strVal(linitial(ref->fields));
	type = category_column_type(relid, column, feature, model);
	if (cats == NULL)
	{
		*taken = pstrdup(column);
		return NIL;
	}
	if (strVal(&cats->val)[0] != '{')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the categories of feature \"%s\" of model \"%s\" must be a text array literal",
						feature, model),
				 errhint("For example category(region, '{north,south,east}').")));
	arr = DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN, strVal(&cats->val), TEXTOID, -1));
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the categories of feature \"%s\" of model \"%s\" must be a one-dimensional array",
						feature, model)));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n < 1 || n > MAX_CATEGORIES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("feature \"%s\" of model \"%s\" must declare 1 to %d categories", feature, model,
						MAX_CATEGORIES)));
	canonical = palloc(sizeof(char *) * n);
	for (i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the categories of feature \"%s\" of model \"%s\" must not contain a null",
							feature, model),
					 errhint("A null value is the feature \"other\".")));
		canonical[i] = category_value(TextDatumGetCString(elems[i]), type, feature, model);
		for (j = 0; j < i; j++)
			if (strcmp(canonical[i], canonical[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("feature \"%s\" of model \"%s\" declares a category twice", feature, model)));
	}
	return category_group_texts(column, type, canonical, n);
}

/*
 * Whether feature j of m is, parsed, the "other" feature of a one-hot
 * group as category_group_texts writes it, NOT COALESCE(column = ANY
 * (constant array), false) under a deterministic collation: if so, the
 * column's name and base type, and its categories as canonical text.
 */
static bool
category_other_parse(UnlearnModel *m, int j, char **column, Oid *base, char ***categories, int *n)
{
	const char *text = m->def.features[j];
	Oid			relid = m->def.source;
	Oid			type;
	Node	   *expr;
	CoalesceExpr *coalesce;
	ScalarArrayOpExpr *any;
	Const	   *arr;
	List	   *vars;
	Var		   *var;
	Datum	   *elems;
	bool	   *nulls;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Oid			elemtype;
	Oid			output;
	bool		varlena;
	int			i;

	if (!feature_is_expression(m, j) || strncmp(text, "(NOT COALESCE(", 14) != 0)
		return false;
	expr = feature_expr_parse(text, relid, m->def.name, false, &type);
	if (!is_notclause(expr))
		return false;
	coalesce = (CoalesceExpr *) get_notclausearg(expr);
	if (!IsA(coalesce, CoalesceExpr) || list_length(coalesce->args) != 2 ||
		!IsA(linitial(coalesce->args), ScalarArrayOpExpr))
		return false;
	any = linitial(coalesce->args);
	if (!any->useOr || list_length(any->args) != 2 || !IsA(lsecond(any->args), Const) ||
		(OidIsValid(any->inputcollid) && !get_collation_isdeterministic(any->inputcollid)))
		return false;
	arr = lsecond(any->args);
	vars = pull_var_clause(linitial(any->args), 0);
	if (arr->constisnull || list_length(vars) != 1)
		return false;
	var = linitial(vars);
	*column = get_attname(relid, var->varattno, true);
	if (*column == NULL)
		return false;
	*base = getBaseType(get_atttype(relid, var->varattno));
	elemtype = ARR_ELEMTYPE(DatumGetArrayTypeP(arr->constvalue));
	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(DatumGetArrayTypeP(arr->constvalue), elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, n);
	getTypeOutputInfo(elemtype, &output, &varlena);
	*categories = palloc(sizeof(char *) * Max(*n, 1));
	for (i = 0; i < *n; i++)
	{
		if (nulls[i])
			return false;
		(*categories)[i] = category_value(OidOutputFunctionCall(output, elems[i]), *base, text,
										  m->def.name);
	}
	return true;
}

/*
 * Whether m's features from first on are, as text, the expressions texts
 * (canonicalised as resolve_features stores them).
 */
static bool
features_are(UnlearnModel *m, int first, List *texts)
{
	Oid			type;
	ListCell   *lc;
	int			i = first;

	if (first < 0 || first + list_length(texts) > m->def.nfeatures)
		return false;
	foreach(lc, texts)
	{
		if (!feature_is_expression(m, i) ||
			strcmp(feature_expr_canonical(feature_expr_parse(lfirst(lc), m->def.source, m->def.name,
															 false, &type),
										  m->def.source),
				   m->def.features[i]) != 0)
			return false;
		i++;
	}
	return true;
}

/*
 * If feature j of m is the "other" feature of a category() group that
 * category_group_texts wrote, the group's length (its categories and
 * "other", which end at j) and in *sql the unlearn._category_values call
 * that computes the group's features in one lookup; else 0.  The group is
 * recognised only when each of its stored features is, as text, what
 * category_group_texts gives today for the column and the categories
 * that "other" names: so the call computes exactly what the stored
 * expressions compute (the column compared in its own type, a text column
 * under a deterministic collation, bytewise).
 */
static int
category_group_ending_at(UnlearnModel *m, int j, char **sql)
{
	char	   *column;
	Oid			base;
	char	  **categories;
	int			n;
	List	   *texts;
	Datum		arr;

	if (!category_other_parse(m, j, &column, &base, &categories, &n) || n < 1 ||
		n > MAX_CATEGORIES)
		return 0;
	texts = category_group_texts(column, base, categories, n);
	if (!features_are(m, j - n, texts))
		return 0;
	arr = cstring_text_array(categories, n);
	*sql = psprintf("unlearn._category_values(%s%s, %s::%s[])", quote_identifier(column),
					base == TEXTOID || base == VARCHAROID || base == BPCHAROID ? "::text" : "",
					quote_literal_cstr(OidOutputFunctionCall(F_ARRAY_OUT, arr)),
					category_array_type(base));
	return n + 1;
}

/*
 * The one-hot group of m's features that encodes column, found by its
 * "other" (named by the column): its first feature and its categories;
 * false if there is none.  With compare, each of its features must also
 * be, as text, what category_group_texts writes for them (n + 1
 * expressions parsed); without, only an expression, which is what a
 * statement's trigger can afford.
 */
bool
category_group_of_column(UnlearnModel *m, const char *column, bool compare, int *first,
						 char ***categories, int *n)
{
	int			j,
				i;

	for (j = 0; j < m->def.nfeatures; j++)
	{
		char	   *name;
		Oid			base;
		bool		found;

		if (!category_other_parse(m, j, &name, &base, categories, n) || strcmp(name, column) != 0 ||
			j < *n)
			continue;
		found = true;
		if (compare)
			found = features_are(m, j - *n, category_group_texts(column, base, *categories, *n));
		for (i = j - *n; found && i < j; i++)
			found = feature_is_expression(m, i);
		if (found)
		{
			*first = j - *n;
			return true;
		}
	}
	return false;
}

/*
 * The category() groups among m's features, found once per call of m:
 * see CategoryGroups.  Without unlearn._category_values (a catalog before
 * 0.21.0), none.
 */
CategoryGroups *
model_category_groups(UnlearnModel *m)
{
	CategoryGroups *g = m->call.category_groups;
	MemoryContext old;
	int			j;

	if (g != NULL)
		return g;
	old = MemoryContextSwitchTo(GetMemoryChunkContext(m));
	g = palloc0(sizeof(CategoryGroups));
	g->length = palloc0(sizeof(int) * m->def.nfeatures);
	g->sql = palloc0(sizeof(char *) * m->def.nfeatures);
	if (!m->def.feature_array && catalog_has_category_values())
		for (j = m->def.nfeatures - 1; j > 0; j--)
		{
			char	   *sql;
			int			k = category_group_ending_at(m, j, &sql);
			int			i;

			if (k == 0)
				continue;
			g->length[j - k + 1] = k;
			g->sql[j - k + 1] = sql;
			elog(DEBUG1, "unlearn: model \"%s\": features %d to %d read as one category() group",
				 m->def.name, j - k + 2, j + 1);
			for (i = j - k + 2; i <= j; i++)
				g->length[i] = -1;
			j -= k - 1;
		}
	MemoryContextSwitchTo(old);
	m->call.category_groups = g;
	return g;
}

/* whether feature j of m belongs to a category() group: never null, 0 or 1 */
bool
feature_in_category_group(UnlearnModel *m, int j)
{
	return model_category_groups(m)->length[j] != 0;
}

/* the column names a raw expression reads */
static List *
column_refs(Node *raw, const char *text, const char *model, const char *what)
{
	ColumnNames c = {NIL, text, model, what};

	collect_column_refs(raw, &c);
	return c.names;
}

/* the column names an expression's text reads, without looking at any table */
List *
feature_expr_column_names(const char *text, const char *model)
{
	return column_refs(raw_expression(text, model, "feature expression"), text, model,
					   "feature expression");
}

/*
 * The settings every feature expression is parsed, deparsed and run under:
 * names resolve in pg_catalog only, and a constant's text means the same
 * value whoever reads it (string escapes, = NULL, array NULLs, dates,
 * intervals, time zones, float digits, money).
 */
static const char *const expression_settings[][2] = {
	{"search_path", "pg_catalog, pg_temp"},
	{"standard_conforming_strings", "on"},
	{"transform_null_equals", "off"},
	{"array_nulls", "on"},
	{"DateStyle", "ISO, YMD"},
	{"IntervalStyle", "postgres"},
	{"TimeZone", "UTC"},
	{"extra_float_digits", "1"},
	{"lc_monetary", "C"},
	{"quote_all_identifiers", "off"},
	{"bytea_output", "hex"},
};

int
pin_expression_settings(void)
{
	int			level = NewGUCNestLevel();
	int			i;

	for (i = 0; i < lengthof(expression_settings); i++)
		(void) set_config_option(expression_settings[i][0], expression_settings[i][1],
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
unpin_expression_settings(int level)
{
	AtEOXact_GUC(true, level);
}

typedef struct ExprCheck
{
	const char *text;
	const char *model;
	const char *what;			/* "feature expression" or "filter" */
	Oid			bad_function;
	int			depth;			/* of the node being checked */
	bool		linear;			/* only operations of linear cost (below) */
} ExprCheck;

/*
 * Nesting accepted at training: the triggers parse the expression again at
 * whatever stack depth a DELETE runs, so its depth must stay far from
 * max_stack_depth.
 */
#define MAX_EXPRESSION_DEPTH 100

static bool
function_not_allowed(Oid funcid, void *context)
{
	ExprCheck  *c = (ExprCheck *) context;

	if (funcid >= FirstNormalObjectId || func_volatile(funcid) != PROVOLATILE_IMMUTABLE)
	{
		c->bad_function = funcid;
		return true;
	}
	return false;
}

/*
 * The types an expression may compute with: numbers, booleans, text,
 * dates, timestamps without time zone and intervals, and arrays of them.
 * Not bytea, cstring or the reg* types: a built-in immutable function over
 * them can still depend on a setting (bytea_output) or name an object a
 * role can drop or change (a regclass or regconfig constant).
 */
static bool
type_allowed(Oid type)
{
	Oid			elem = get_element_type(type);
	Oid			scalar = OidIsValid(elem) ? elem : type;

	if (is_numeric_scalar(scalar))
		return true;
	switch (scalar)
	{
		case BOOLOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case DATEOID:
		case TIMESTAMPOID:
		case INTERVALOID:
			return true;
		default:
			return false;
	}
}

static void
check_type_allowed(Oid type, ExprCheck *c)
{
	if (!type_allowed(type))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("%s \"%s\" of model \"%s\" computes with type %s",
						c->what, c->text, c->model, format_type_be(type)),
				 errhint("Feature expressions compute with numbers, booleans, text, dates, timestamps without time zone and intervals.")));
}

static void
check_operator_built_in(Oid opno, ExprCheck *c)
{
	if (opno >= FirstNormalObjectId)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("%s \"%s\" of model \"%s\" uses operator %s, which is not built in",
						c->what, c->text, c->model, format_operator(opno)),
				 errhint(EXPRESSION_RULE_HINT)));
}

static void
check_collation_built_in(Oid collation, ExprCheck *c)
{
	if (collation >= FirstNormalObjectId)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("%s \"%s\" of model \"%s\" uses a collation that is not built in",
						c->what, c->text, c->model),
				 errhint(EXPRESSION_RULE_HINT)));
}


/*
 * Operations of linear cost.  A model whose owner does not own its table
 * evaluates its expressions in every writer's statement, so the owner of
 * such a model may use only operations whose cost is linear in their
 * operands, which are the row's values and the expression's constants:
 *
 *	- functions and operators over fixed-size types (FIXED_COST_TYPE:
 *	  booleans, integers, floats, dates, timestamps, intervals) with a
 *	  result of such a type, each O(1);
 *	- casts to or from such a type (numeric to double precision and
 *	  back), linear in the operand;
 *	- B-tree comparisons (=, <>, <, <=, >, >=, IN, NULLIF, GREATEST,
 *	  LEAST) of any allowed type, text and numeric included, linear in
 *	  the operands under the built-in collations;
 *	- CASE, COALESCE, AND, OR, NOT, IS [NOT] NULL, IS [NOT] TRUE.
 *
 * Not, for example, repeat(), lpad() or || (whose result grows with a
 * constant), regular expressions or LIKE (whose matching is not linear),
 * or numeric arithmetic (quadratic in the digits).  With the length of
 * its text bounded by MAX_LINEAR_EXPRESSION, an expression then costs at
 * most a constant times that length times the row's width per row.
 */
#define MAX_LINEAR_EXPRESSION 4096

static bool
fixed_cost_type(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case INTERVALOID:
			return true;
		default:
			return false;
	}
}

static void
refuse_nonlinear(ExprCheck *c, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("%s \"%s\" of model \"%s\" uses %s, which only the table's owner may attach",
					c->what, c->text, c->model, what),
			 errdetail("The table's writers evaluate a model's expressions in each statement, so the owner of a model on another role's table may use only operations of linear cost."),
			 errhint("Use comparisons, CASE, COALESCE and arithmetic on integers, floats, dates and intervals (cast numeric columns to double precision), or ask the table's owner to train the model.")));
}

/* an operator of linear cost: over fixed-size types, or a B-tree comparison */
static void
check_linear_operator(Oid opno, ExprCheck *c)
{
	Oid			left,
				right;

	op_input_types(opno, &left, &right);
	if (fixed_cost_type(get_op_rettype(opno)) &&
		(!OidIsValid(left) || fixed_cost_type(left)) && fixed_cost_type(right))
		return;
	if (get_op_btree_interpretation(opno) != NIL)
		return;
	refuse_nonlinear(c, psprintf("operator %s", format_operator(opno)));
}

/* a function of linear cost: over fixed-size types, or a cast to or from one */
static void
check_linear_function(FuncExpr *f, ExprCheck *c)
{
	ListCell   *lc;

	if ((f->funcformat == COERCE_EXPLICIT_CAST || f->funcformat == COERCE_IMPLICIT_CAST) &&
		(fixed_cost_type(f->funcresulttype) ||
		 fixed_cost_type(exprType((Node *) linitial(f->args)))))
		return;
	if (fixed_cost_type(f->funcresulttype))
	{
		foreach(lc, f->args)
			if (!fixed_cost_type(exprType((Node *) lfirst(lc))))
				break;
		if (lc == NULL)
			return;
	}
	refuse_nonlinear(c, psprintf("function %s", format_procedure(f->funcid)));
}

/* the walker of the analysed tree: a closed list of node kinds */
static bool
check_node(Node *node, ExprCheck *c)
{
	bool		deeper;

	if (node == NULL)
		return false;
	if (c->depth > MAX_EXPRESSION_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s \"%s\" of model \"%s\" nests more than %d levels",
						c->what, c->text, c->model, MAX_EXPRESSION_DEPTH),
				 errhint("Split it into several features, or simplify it.")));
	switch (nodeTag(node))
	{
		case T_Var:
			{
				Var		   *var = (Var *) node;

				if (var->varlevelsup != 0 || var->varattno <= 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
							 errmsg("%s \"%s\" of model \"%s\" may read only the row's own columns",
									c->what, c->text, c->model),
							 errhint(EXPRESSION_RULE_HINT)));
				/* a domain's checks never run on a column read */
				check_type_allowed(getBaseType(var->vartype), c);
				check_collation_built_in(var->varcollid, c);
				return false;
			}
		case T_List:
			return expression_tree_walker(node, check_node, (void *) c);
		case T_OpExpr:
		case T_DistinctExpr:
		case T_NullIfExpr:
			/* an operator a role made could be dropped or made again */
			check_operator_built_in(((OpExpr *) node)->opno, c);
			if (c->linear)
				check_linear_operator(((OpExpr *) node)->opno, c);
			break;
		case T_ScalarArrayOpExpr:
			check_operator_built_in(((ScalarArrayOpExpr *) node)->opno, c);
			if (c->linear)
				check_linear_operator(((ScalarArrayOpExpr *) node)->opno, c);
			break;
		case T_FuncExpr:
			if (c->linear)
				check_linear_function((FuncExpr *) node, c);
			break;
		case T_CollateExpr:
			check_collation_built_in(((CollateExpr *) node)->collOid, c);
			break;
		case T_Const:
		case T_BoolExpr:
		case T_RelabelType:
		case T_CaseExpr:
		case T_CaseWhen:
		case T_CaseTestExpr:
		case T_CoalesceExpr:
		case T_MinMaxExpr:
		case T_NullTest:
		case T_BooleanTest:
		case T_ArrayExpr:
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s \"%s\" of model \"%s\" uses a construct unlearn does not evaluate",
							c->what, c->text, c->model),
					 errhint(EXPRESSION_RULE_HINT)));
	}
	check_type_allowed(exprType(node), c);
	if (check_functions_in_node(node, function_not_allowed, (void *) c))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("%s \"%s\" of model \"%s\" calls %s, which is not a built-in immutable function",
						c->what, c->text, c->model, format_procedure(c->bad_function)),
				 errdetail("An expression is evaluated while models are maintained, as other roles, so it may call only code that is built in and gives the same result for the same row."),
				 errhint(EXPRESSION_RULE_HINT)));
	c->depth++;
	deeper = expression_tree_walker(node, check_node, (void *) c);
	c->depth--;
	return deeper;
}

/*
 * Parse and check one feature expression against relid.  Returns the
 * analysed tree; *result_type its type.  With linear, only operations of
 * linear cost are accepted (see MAX_LINEAR_EXPRESSION).  Errors name the
 * expression and the model, never a row.
 */
static Node *
expression_parse(const char *text, Oid relid, const char *model, bool linear,
				 Oid *result_type, const char *what)
{
	ExprErrorContext ectx = {text, model, what};
	ErrorContextCallback callback;
	ExprCheck	check = {text, model, what, InvalidOid, 0, linear};
	List	   *names;
	ListCell   *lc;
	Node	   *raw;
	Node	   *expr;
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	Relation	rel;
	int			level;

	if (linear && strlen(text) > MAX_LINEAR_EXPRESSION)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s of model \"%s\" is longer than %d bytes, which only the table's owner may attach",
						what, model, MAX_LINEAR_EXPRESSION),
				 errdetail("The table's writers evaluate a model's expressions in each statement."),
				 errhint("Split it into shorter features, or ask the table's owner to train the model.")));
	raw = raw_expression(text, model, what);
	names = column_refs(raw, text, model, what);
	foreach(lc, names)
	{
		AttrNumber	attnum = get_attnum(relid, strVal(lfirst(lc)));

		if (attnum == InvalidAttrNumber || attnum < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							strVal(lfirst(lc)), get_rel_name(relid)),
					 errcontext("%s \"%s\" of model \"%s\"", what, text, model)));
	}

	callback.callback = expression_error_context;
	callback.arg = &ectx;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	level = pin_expression_settings();

	pstate = make_parsestate(NULL);
	rel = relation_open(relid, AccessShareLock);
	nsitem = addRangeTableEntryForRelation(pstate, rel, AccessShareLock, NULL, false, false);
	addNSItemToQuery(pstate, nsitem, false, true, true);
	expr = transformExpr(pstate, raw, EXPR_KIND_GENERATED_COLUMN);
	assign_expr_collations(pstate, expr);
	relation_close(rel, NoLock);
	free_parsestate(pstate);
	check_node(expr, &check);

	unpin_expression_settings(level);
	error_context_stack = callback.previous;
	*result_type = exprType(expr);
	return expr;
}

Node *
feature_expr_parse(const char *text, Oid relid, const char *model, bool linear,
				   Oid *result_type)
{
	return expression_parse(text, relid, model, linear, result_type, "feature expression");
}

/* feature_expr_parse for a model's row filter: its errors call it one */
Node *
filter_expr_parse(const char *text, Oid relid, const char *model, bool linear, Oid *result_type)
{
	return expression_parse(text, relid, model, linear, result_type, "filter");
}

/* each collatable column read under its collation named: see feature_expr_canonical */
static Node *
name_collations(Node *node, void *context)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, CollateExpr))
		return node;
	if (IsA(node, Var) && OidIsValid(((Var *) node)->varcollid))
	{
		CollateExpr *named = makeNode(CollateExpr);

		named->arg = (Expr *) copyObject(node);
		named->collOid = ((Var *) node)->varcollid;
		named->location = -1;
		return (Node *) named;
	}
	return expression_tree_mutator(node, name_collations, context);
}

/*
 * The canonical text of a checked expression: what the catalog keeps.
 * A text column is read with its collation named (sex_code COLLATE
 * "default"), so that a later change of the column's collation cannot
 * change what the expression computes for the rows already in the model.
 */
char *
feature_expr_canonical(Node *expr, Oid relid)
{
	int			level = pin_expression_settings();
	char	   *text = deparse_expression(name_collations(expr, NULL),
										  deparse_context_for(get_rel_name(relid), relid),
										  false, false);

	unpin_expression_settings(level);
	return text;
}

/* the SQL of feature j in a select list over the model's table */
char *
feature_sql(UnlearnModel *m, int j)
{
	if (feature_is_expression(m, j))
		return psprintf("(%s)", m->def.features[j]);
	return (char *) quote_identifier(m->def.features[j]);
}

/*
 * Parse and check m's stored row filter against relid, by the rules of
 * feature expressions; an error unless it is still boolean.
 */
Node *
model_filter_parse(UnlearnModel *m, Oid relid)
{
	Oid			type;
	Node	   *expr = filter_expr_parse(m->def.filter, relid, m->def.name, false, &type);

	if (type != BOOLOID)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("the filter of model \"%s\" now has type %s, not boolean",
						m->def.name, format_type_be(type)),
				 errhint("Drop the model with unlearn_drop('%s') first, then retrain it.", m->def.name)));
	return expr;
}

/*
 * The SQL condition of m's row filter, "((text) IS TRUE)", or NULL: every
 * row.  The test keeps the filter one qual: the planner reorders the parts
 * of a WHERE clause's top-level AND, but not those of an expression inside
 * one, so SQL evaluates the filter's parts in its order and stops where the
 * triggers' evaluator stops (feature_evaluator_selects); a part that fails
 * for a row fails on both sides or on neither.
 */
char *
model_filter_sql(UnlearnModel *m)
{
	return m->def.filter != NULL ? psprintf("((%s) IS TRUE)", m->def.filter) : NULL;
}

/*
 * The rows of relation (the model's table) a query over them reads for
 * the model: "relation WHERE <model_filter_sql>", or relation
 */
char *
model_rows_of(UnlearnModel *m, const char *relation)
{
	if (m->def.filter == NULL)
		return (char *) relation;
	return psprintf("%s WHERE %s", relation, model_filter_sql(m));
}

/* the columns feature j reads */
List *
feature_column_names(UnlearnModel *m, int j)
{
	if (feature_is_expression(m, j))
		return feature_expr_column_names(m->def.features[j], m->def.name);
	return list_make1(makeString(m->def.features[j]));
}

/*
 * Vars of an expression parsed against the model's table, moved to the
 * columns of the same names in another row type (a partition, or the row
 * passed to unlearn_score_row), which must have them with the same types.
 */
typedef struct VarMove
{
	TupleDesc	from;
	TupleDesc	to;
	UnlearnModel *m;
	const char *what;			/* "feature expression" or "filter" */
	const char *text;			/* its text */
} VarMove;

static Node *
move_vars(Node *node, VarMove *mv)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) copyObject(node);
		const char *name = NameStr(TupleDescAttr(mv->from, var->varattno - 1)->attname);
		int			a;

		for (a = 0; a < mv->to->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(mv->to, a);

			if (att->attisdropped || strcmp(NameStr(att->attname), name) != 0)
				continue;
			if (att->atttypid != var->vartype || att->attcollation != var->varcollid)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("column \"%s\" of the row has type %s, but %s \"%s\" of model \"%s\" reads it as %s",
								name, format_type_be(att->atttypid), mv->what, mv->text,
								mv->m->def.name, format_type_be(var->vartype))));
			var->varattno = var->varattnosyn = a + 1;
			var->vartypmod = att->atttypmod;
			return (Node *) var;
		}
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("the row has no column \"%s\"", name),
				 errhint("The %s \"%s\" of model \"%s\" reads it.",
						 mv->what, mv->text, mv->m->def.name)));
	}
	return expression_tree_mutator(node, move_vars, (void *) mv);
}

struct FeatureEvaluator
{
	UnlearnModel *m;
	ExprState **states;			/* per feature; NULL for a column */
	ExprState  *filter;			/* the row filter, or NULL */
	ExprContext *econtext;
};

/*
 * An evaluator of m's expression features, and with with_filter of its row
 * filter, over slots of desc, allocated in the current memory context;
 * NULL when it has nothing to evaluate.
 */
FeatureEvaluator *
feature_evaluator_create(UnlearnModel *m, TupleDesc desc, bool with_filter)
{
	FeatureEvaluator *fe;
	Relation	source;
	int			j;

	with_filter = with_filter && m->def.filter != NULL;
	if (m->def.is_expression == NULL && !with_filter)
		return NULL;
	fe = palloc0(sizeof(FeatureEvaluator));
	fe->m = m;
	fe->states = palloc0(sizeof(ExprState *) * m->def.nfeatures);
	fe->econtext = CreateStandaloneExprContext();
	source = relation_open(m->def.source, AccessShareLock);
	if (with_filter)
	{
		Node	   *expr = model_filter_parse(m, m->def.source);
		VarMove		mv = {RelationGetDescr(source), desc, m, "filter", m->def.filter};

		expr = move_vars(expr, &mv);
		fe->filter = ExecInitExpr(expression_planner((Expr *) expr), NULL);
	}
	for (j = 0; j < m->def.nfeatures; j++)
	{
		Oid			type;
		Node	   *expr;
		VarMove		mv = {RelationGetDescr(source), desc, m, "feature expression", m->def.features[j]};

		if (!feature_is_expression(m, j))
			continue;
		expr = feature_expr_parse(m->def.features[j], m->def.source, m->def.name, false, &type);
		if (type != m->def.column_types[j])
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("feature expression \"%s\" of model \"%s\" now has type %s, not %s",
							m->def.features[j], m->def.name, format_type_be(type),
							format_type_be(m->def.column_types[j])),
					 errhint("Drop the model with unlearn_drop('%s') first, then retrain it.", m->def.name)));
		expr = move_vars(expr, &mv);
		fe->states[j] = ExecInitExpr(expression_planner((Expr *) expr), NULL);
	}
	relation_close(source, NoLock);
	return fe;
}

/*
 * values[j + 1] and isnull[j + 1] of every expression feature j over the
 * row in slot (decode_model_row's layout).  The results live until
 * feature_evaluator_reset.
 */
void
feature_evaluator_fill(FeatureEvaluator *fe, TupleTableSlot *slot, Datum *values, bool *isnull)
{
	ExprErrorContext ectx = {NULL, fe->m->def.name, "feature expression"};
	ErrorContextCallback callback;
	int			j;

	callback.callback = expression_error_context;
	callback.arg = &ectx;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	fe->econtext->ecxt_scantuple = slot;
	for (j = 0; j < fe->m->def.nfeatures; j++)
		if (fe->states[j] != NULL)
		{
			ectx.text = fe->m->def.features[j];
			values[j + 1] = ExecEvalExprSwitchContext(fe->states[j], fe->econtext, &isnull[j + 1]);
		}
	error_context_stack = callback.previous;
}

/*
 * Whether the row in slot passes the model's row filter (true when the
 * evaluator has none); NULL counts as false, as in a WHERE clause.
 */
bool
feature_evaluator_selects(FeatureEvaluator *fe, TupleTableSlot *slot)
{
	ExprErrorContext ectx = {fe->m->def.filter, fe->m->def.name, "filter"};
	ErrorContextCallback callback;
	bool		isnull;
	Datum		d;

	if (fe->filter == NULL)
		return true;
	callback.callback = expression_error_context;
	callback.arg = &ectx;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	fe->econtext->ecxt_scantuple = slot;
	d = ExecEvalExprSwitchContext(fe->filter, fe->econtext, &isnull);
	error_context_stack = callback.previous;
	return !isnull && DatumGetBool(d);
}

void
feature_evaluator_reset(FeatureEvaluator *fe)
{
	ResetExprContext(fe->econtext);
}

void
feature_evaluator_free(FeatureEvaluator *fe)
{
	FreeExprContext(fe->econtext, true);
}
