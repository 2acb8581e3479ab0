/*-------------------------------------------------------------------------
 *
 * privilege.c
 *	  Who may do what with a model, and the one security context in which
 *	  the extension touches its catalog and the rows of trained tables.
 *
 * Invariants (every entry point in unlearn.c, trigger.c, verify.c keeps
 * them by calling enter_extension_context first, and checks the rights of
 * the caller it records; an error unwinds the context with the
 * transaction):
 *
 *	- Only the extension writes unlearn.*: no role holds INSERT, UPDATE or
 *	  DELETE on its tables (sql/unlearn.sql), and the C entry points write
 *	  them as the extension's owner, a superuser, after checking the
 *	  caller's rights here.  So a model's definition (source, columns,
 *	  types, classes, dimensions, row map) changes only through unlearn_*
 *	  functions, and the ledger is append-only.
 *	- Inside the context the user is the extension owner with
 *	  SECURITY_RESTRICTED_OPERATION and search_path = pg_catalog, pg_temp.
 *	  No code that a non-superuser can define runs there: rows are read in
 *	  binary through a closed list of built-in types (rows.c), without
 *	  casts, operators or type I/O; every SQL statement names pg_catalog
 *	  or unlearn objects only.
 *	- A query over a trained table's rows runs as the table's owner (still
 *	  restricted, row_security off, search_path = pg_catalog, pg_temp so
 *	  that feature expressions resolve to built-in functions only, see
 *	  feature_expr.c), as VACUUM and ANALYZE do: planning it
 *	  evaluates the owner's index predicates and expressions and
 *	  statistics expressions, which may call functions the owner wrote,
 *	  and those must never run as the extension's owner.  With
 *	  row_security off, a policy that would hide rows from the owner
 *	  (FORCE ROW LEVEL SECURITY) is an error, never a silently smaller
 *	  table.
 *	- The rights checked are the caller's, saved on entry:
 *		training needs SELECT on the label and feature columns (and the
 *		columns feature expressions read) and the
 *		TRIGGER privilege on the table (the right to attach code to its
 *		writes), and a table whose row-level security applies to the caller
 *		is refused (the model would otherwise learn rows the caller cannot
 *		see);
 *		retrain needs the model's owner and, again, the rights of training;
 *		verify and residual need the model's owner;
 *		drop needs the model's owner or the table's owner, so no model
 *		owner can stand between a table owner and erasure;
 *		reading a model's weights (coef, predictions, scores, evaluation)
 *		needs its owner or a 'read' grant, and reading its figures (status,
 *		ledger, notices of what a change did to it) its owner or any grant
 *		(unlearn_grant); a grant names a role, whose members inherit it;
 *		a change of the table reaches a model only while its owner may
 *		still read those columns (model_owner_may_read), since the owner
 *		reads the factor every row moves; otherwise the model is suspended.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/syscache.h"

/* The owner of unlearn.models: the role that created the extension. */
Oid
extension_owner(void)
{
	Oid			nsp = get_namespace_oid("unlearn", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("models", nsp) : InvalidOid;
	HeapTuple	tuple;
	Oid			owner;

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the unlearn catalog is missing"),
				 errhint("Run CREATE EXTENSION unlearn.")));
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (!superuser_arg(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("the unlearn catalog must belong to a superuser"),
				 errhint("The extension writes its catalog and reads trained tables as the role that created it.")));
	return owner;
}

void
enter_extension_context(ExtensionContext *ctx)
{
	GetUserIdAndSecContext(&ctx->save_userid, &ctx->save_sec_context);
	ctx->caller = ctx->save_userid;
	SetUserIdAndSecContext(extension_owner(),
						   ctx->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	/* only names: the table-owner context pins what expressions need too */
	ctx->nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/*
 * In the extension's context, no JIT for the queries to come: the catalog
 * queries of DDL paths are small, but pg_partition_tree's default
 * estimate (1,000 rows) can cost them past jit_above_cost, and a
 * compilation would add a second to every DROP or ALTER TABLE in the
 * database.  Undone with the context (leave_extension_context).
 */
void
catalog_queries_without_jit(void)
{
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

void
leave_extension_context(ExtensionContext *ctx)
{
	AtEOXact_GUC(false, ctx->nestlevel);
	SetUserIdAndSecContext(ctx->save_userid, ctx->save_sec_context);
}

/* the owner of relation relid, whose rows are read as that role */
Oid
table_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/* read the rows of relid as its owner (see the invariants above) */
void
enter_table_owner_context(Oid relid, ExtensionContext *ctx)
{
	Oid			owner = table_owner(relid);

	GetUserIdAndSecContext(&ctx->save_userid, &ctx->save_sec_context);
	ctx->caller = ctx->save_userid;
	SetUserIdAndSecContext(owner, ctx->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	ctx->nestlevel = pin_expression_settings();
	(void) set_config_option("row_security", "off",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

void
check_model_owner(UnlearnModel *m, Oid caller)
{
	if (!has_privs_of_role(caller, m->def.owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", m->def.name),
				 errhint("Models belong to the role that trained them.")));
}

/*
 * drop and apply the queue: the model's owner, or the owner of the table
 * it is trained on, so that no model owner can stand between a table's
 * owner and erasure; `hint` says what the table's owner may do
 */
void
check_model_or_table_owner(UnlearnModel *m, Oid caller, const char *hint)
{
	bool		exists = get_rel_name(m->def.source) != NULL;

	if (exists && pg_class_ownercheck(m->def.source, caller))
		return;
	if (has_privs_of_role(caller, m->def.owner))
	{
		/*
		 * A model owner who may no longer read the table must not lock it
		 * (these functions lock it to the end of the transaction, and
		 * erasure would wait): its table's owner acts instead.
		 */
		if (exists && pg_class_aclcheck(m->def.source, caller, ACL_SELECT) != ACLCHECK_OK &&
			pg_attribute_aclcheck_all(m->def.source, caller, ACL_SELECT, ACLMASK_ANY) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("the owner of model \"%s\" may no longer read its table", m->def.name),
					 errdetail("This function locks the table, which only a role that may read it or owns it may do."),
					 errhint("The owner of table %s, or a superuser, can do it.",
							 relation_qualified_name(m->def.source))));
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("must be owner of model \"%s\" or of its table", m->def.name),
			 errhint("%s", hint)));
}

/*
 * May role read every row of m's columns in relid: SELECT on each model
 * column (or the table), and no row-level security that applies to it?
 */
static bool
may_read_columns(UnlearnModel *m, Oid relid, Oid role, const char **column)
{
	ListCell   *lc;

	*column = NULL;
	foreach(lc, model_read_columns(m))
	{
		const char *col = strVal(lfirst(lc));
		AttrNumber	attnum = get_attnum(relid, col);

		if (attnum == InvalidAttrNumber ||
			(pg_attribute_aclcheck(relid, attnum, role, ACL_SELECT) != ACLCHECK_OK &&
			 pg_class_aclcheck(relid, role, ACL_SELECT) != ACLCHECK_OK))
		{
			*column = col;
			return false;
		}
	}
	return check_enable_rls(relid, role, true) != RLS_ENABLED;
}

/*
 * role may read every row of m's columns in relid now (may_read_columns),
 * or an error (42501) says what is missing: doing is what role wanted to
 * do, why what reads the rows, instead what to ask others to do.
 */
void
check_may_read_rows(UnlearnModel *m, Oid relid, Oid role, const char *doing, const char *why,
					const char *instead)
{
	const char *column;

	if (may_read_columns(m, relid, role, &column))
		return;
	if (column != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for column \"%s\" of table \"%s\"",
						column, get_rel_name(relid)),
				 errhint("%s reads the label and every feature column.", why)));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot %s on table \"%s\": row-level security applies to you",
					doing, get_rel_name(relid)),
			 errdetail("A model reflects every row of its table, including rows the policies hide from you."),
			 errhint("Ask the table's owner, or a role with BYPASSRLS, to %s.", instead)));
}

/*
 * The caller may train m on relid: SELECT on every model column, TRIGGER
 * on the table, and no row-level security that hides rows from it.
 */
void
check_can_train(UnlearnModel *m, Oid relid, Oid caller)
{
	if (pg_class_aclcheck(relid, caller, ACL_TRIGGER) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to train a model on table \"%s\"", get_rel_name(relid)),
				 errdetail("Training attaches triggers to the table, which needs the TRIGGER privilege."),
				 errhint("Ask the table's owner to GRANT TRIGGER on it, or to train the model.")));
	check_may_read_rows(m, relid, caller, "train a model", "Training", "train the model");
}

/*
 * May m's owner still see the rows a change brings to m?  Its factor
 * moves by each added and removed row, and the owner reads its factor: an
 * owner who lost SELECT (or came under row-level security) since training
 * must not learn rows through it.
 */
bool
model_owner_may_read(UnlearnModel *m)
{
	const char *column;

	return may_read_columns(m, m->def.source, m->def.owner, &column);
}

/*
 * Whether m's owner has the privileges of its table's owner (a superuser
 * has): such an owner could attach any code to the table, so its feature
 * expressions are not held to linear cost (feature_expr.c).
 */
bool
model_owner_owns_table(UnlearnModel *m)
{
	return pg_class_ownercheck(m->def.source, m->def.owner);
}

/*
 * May role read model name, owned by owner: its weights and predictions
 * (weights) or its figures only?  The owner (and its members, and
 * superusers) always may; anyone else needs a grant.  Needs SPI and the
 * extension context.
 */
bool
may_read_model(const char *name, Oid owner, Oid role, bool weights)
{
	return has_privs_of_role(role, owner) || catalog_model_granted(name, role, weights);
}

/*
 * May the role whose statement changes m read m's figures?  Asked only
 * when a message about m is to be sent, at most once per load of m: a
 * statement that sends none reads no grant.
 */
bool
caller_reads_figures(UnlearnModel *m)
{
	if (!OidIsValid(m->call.changed_by))
		return true;
	if (m->call.figures_readable == 0)
		m->call.figures_readable = may_read_model(m->def.name, m->def.owner, m->call.changed_by, false) ? 1 : -1;
	return m->call.figures_readable > 0;
}

void
check_model_read(const char *name, Oid owner, Oid caller, bool weights)
{
	if (may_read_model(name, owner, caller, weights))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for model \"%s\"", name),
			 errhint("Its owner can grant %s with unlearn_grant('%s', '%s', '%s').",
					 weights ? "reading it" : "its figures",
					 name, GetUserNameFromId(caller, false), weights ? "read" : "monitor")));
}

/*
 * Check the caller on the model called name: its owner (MODEL_OWNER), or
 * a role that may read its weights or its figures; returns its table.
 */
Oid
check_caller_on_model(const char *name, ModelAccess access)
{
	ExtensionContext ctx;
	Oid			owner,
				source;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	catalog_model_identity(name, false, false, &owner, &source);
	if (access != MODEL_OWNER)
		check_model_read(name, owner, ctx.caller, access == MODEL_WEIGHTS);
	else if (!has_privs_of_role(ctx.caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", name),
				 errhint("Only the owner of a model can read or evict its removal state.")));
	leave_extension_context(&ctx);
	SPI_finish();
	return source;
}
