/*-------------------------------------------------------------------------
 *
 * grants.c
 *	  Who besides its owner may read a model: unlearn_grant, unlearn_revoke,
 *	  and the check of a caller on a model named by the SQL read paths and
 *	  the functions of runtime.c.
 *
 * Two privileges, kept in unlearn.model_grants and checked by
 * may_read_model (privilege.c):
 *	  read		the weights, predictions, scores and evaluation, the
 *				model's row in unlearn.models, and everything of monitor;
 *	  monitor	the model's line in unlearn.status and its ledger rows.
 * A grantee who reads a model before and after a deletion can reconstruct
 * the deleted row (the README's "what a reader of a model can learn"), so
 * the default is the owner alone.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(unlearn_grant);
PG_FUNCTION_INFO_V1(unlearn_revoke);
PG_FUNCTION_INFO_V1(unlearn_check_read);

static void
change_grant(FunctionCallInfo fcinfo, bool grant)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Oid			grantee = PG_GETARG_OID(1);
	char	   *privilege = text_to_cstring(PG_GETARG_TEXT_PP(2));
	ExtensionContext ctx;
	Oid			owner,
				source;

	if (strcmp(privilege, "read") != 0 && strcmp(privilege, "monitor") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown model privilege \"%s\"", privilege),
				 errhint("Use 'read' (weights, predictions and figures) or 'monitor' (figures only).")));
	/* a dropped role's grant can still be revoked */
	if (grant && !SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(grantee)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("role with OID %u does not exist", grantee),
				 errhint("Name the role: unlearn_grant('%s', 'role_name').", name)));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	if (!catalog_has_grants())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the unlearn catalog keeps no grants"),
				 errhint("Run ALTER EXTENSION unlearn UPDATE.")));
	/* the row lock keeps a concurrent drop or replace from orphaning the grant */
	catalog_model_identity(name, true, false, &owner, &source);
	if (!has_privs_of_role(ctx.caller, owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of model \"%s\"", name),
				 errhint("Only the owner of a model can grant or revoke reading it.")));
	if (!catalog_set_grant(name, owner, grantee, privilege, grant))
		ereport(NOTICE,
				(errmsg(grant ? "role \"%s\" already holds %s on model \"%s\"" :
						"role \"%s\" holds no %s grant on model \"%s\"",
						GetUserNameFromId(grantee, true) ? GetUserNameFromId(grantee, true) :
						psprintf("%u", grantee), privilege, name)));
	leave_extension_context(&ctx);
	SPI_finish();
}

/*
 * unlearn_grant(model, grantee, privilege): let grantee and its members
 * read the model (owner only).
 */
Datum
unlearn_grant(PG_FUNCTION_ARGS)
{
	change_grant(fcinfo, true);
	PG_RETURN_VOID();
}

/* unlearn_revoke(model, grantee, privilege): take a grant back (owner only) */
Datum
unlearn_revoke(PG_FUNCTION_ARGS)
{
	change_grant(fcinfo, false);
	PG_RETURN_VOID();
}

/*
 * unlearn._check_read(model, privilege): the table of a model that the
 * caller may read with privilege ('read' or 'monitor'); 42501 otherwise.
 * For the read paths written in SQL (unlearn_ledger).
 */
Datum
unlearn_check_read(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *privilege = text_to_cstring(PG_GETARG_TEXT_PP(1));

	PG_RETURN_OID(check_caller_on_model(name, strcmp(privilege, "monitor") == 0 ?
										MODEL_FIGURES : MODEL_WEIGHTS));
}
