/*-------------------------------------------------------------------------
 *
 * runtime.c
 *	  What the server runs unlearn with: the OpenBLAS core and threads, and
 *	  the state store's memory (unlearn_runtime, the status view's
 *	  resident column, unlearn_evict).
 *
 * Debian's OpenBLAS picks its kernels by CPU at load.  On a CPU newer than
 * the library it falls back to generic SSE3 kernels ("Prescott" and
 * similar), about 3x slower for the O(n p^2) products and with results
 * that depend on operand alignment (unlearn.h, BLAS_ALIGN).  The server
 * logs one WARNING at start-up when that happens on a CPU with AVX2, naming
 * the fix: OPENBLAS_CORETYPE in the server's environment.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <cblas.h>

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(unlearn_runtime);
PG_FUNCTION_INFO_V1(unlearn_resident);
PG_FUNCTION_INFO_V1(unlearn_evict);
PG_FUNCTION_INFO_V1(unlearn_matrices_digest);
PG_FUNCTION_INFO_V1(unlearn_require_preload);
PG_FUNCTION_INFO_V1(unlearn_written_here);

/* OpenBLAS x86-64 cores that use no AVX2 */
static const char *const generic_cores[] = {
	"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
	"coppermine", "northwood", "banias", "opteron", "barcelona", "bobcat"
};

/* true if OpenBLAS runs generic kernels on a CPU that has AVX2 */
static bool
blas_core_is_fallback(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	const char *core = openblas_get_corename();
	int			i;

	if (core == NULL || !__builtin_cpu_supports("avx2"))
		return false;
	for (i = 0; i < lengthof(generic_cores); i++)
		if (pg_strcasecmp(core, generic_cores[i]) == 0)
			return true;
#endif
	return false;
}

/* at start-up (shared_preload_libraries): the one WARNING on a fallback core */
void
runtime_check_blas(void)
{
	if (!process_shared_preload_libraries_in_progress || !blas_core_is_fallback())
		return;
	ereport(WARNING,
			(errmsg("OpenBLAS runs its generic \"%s\" kernels on a CPU with AVX2",
					openblas_get_corename()),
			 errdetail("This OpenBLAS does not recognise the CPU; training and re-anchoring run about 3 times slower."),
			 errhint("Set OPENBLAS_CORETYPE (e.g. Haswell or SkylakeX) in the server's environment, such as /etc/postgresql/15/main/environment, and restart.")));
}

/* unlearn._require_preload(): CREATE EXTENSION and updates call it first */
Datum
unlearn_require_preload(PG_FUNCTION_ARGS)
{
	state_store_require();
	PG_RETURN_VOID();
}

/*
 * unlearn_runtime(): one row on the BLAS and the state store.  The thread
 * count is the one training and re-anchoring use; removals run on one.
 */
Datum
unlearn_runtime(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[10];
	bool		nulls[10] = {false};
	int64		size,
				entries,
				hits,
				misses,
				evictions;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	state_store_counters(&size, &entries, &hits, &misses, &evictions);
	values[0] = CStringGetTextDatum(openblas_get_corename());
	values[1] = BoolGetDatum(blas_core_is_fallback());
	values[2] = Int32GetDatum(linalg_threads());
	values[3] = CStringGetTextDatum(openblas_get_config());
	values[4] = BoolGetDatum(state_store_available());
	values[5] = Int64GetDatum(size);
	values[6] = Int64GetDatum(entries);
	values[7] = Int64GetDatum(hits);
	values[8] = Int64GetDatum(misses);
	values[9] = Int64GetDatum(evictions);
	/* they move with every change of any model: statistics, as in pg_stat_statements */
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
		nulls[6] = nulls[7] = nulls[8] = nulls[9] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/* the version of model's state row, read as the extension (no row security) */
static bool
model_state_version(const char *model, StateVersion *version)
{
	ExtensionContext ctx;
	bool		found;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	found = catalog_state_version(model, version);
	leave_extension_context(&ctx);
	SPI_finish();
	return found;
}

/* unlearn._resident(model): are its matrices in shared memory at its version? */
Datum
unlearn_resident(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	StateVersion version;

	check_caller_on_model(model, MODEL_FIGURES);
	if (!state_store_available() || !model_state_version(model, &version))
		PG_RETURN_BOOL(false);
	PG_RETURN_BOOL(state_store_resident(model, &version));
}

/*
 * unlearn._matrices_digest(model): a hash of its resident matrices (owner
 * only), NULL if they are not resident; tests compare it across ROLLBACK.
 */
Datum
unlearn_matrices_digest(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	StateVersion version;
	char	   *digest;

	check_caller_on_model(model, MODEL_OWNER);
	if (!state_store_available() || !model_state_version(model, &version))
		PG_RETURN_NULL();
	digest = state_store_digest(model, &version);
	if (digest == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(digest));
}

/*
 * unlearn_evict(model): free a model's matrices now (owner only); its next
 * change rebuilds them with one pass over its table.
 */
Datum
unlearn_evict(PG_FUNCTION_ARGS)
{
	char	   *model = text_to_cstring(PG_GETARG_TEXT_PP(0));

	state_store_require();
	check_caller_on_model(model, MODEL_OWNER);
	PG_RETURN_BOOL(state_store_evict(model));
}

/*
 * unlearn._written_here(xid): whether a row version with that xmin was
 * written by the current transaction or one of its subtransactions, for
 * the policy that hides an uncommitted fisher or Noisy-GD release from the
 * model's grantees.
 */
Datum
unlearn_written_here(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(TransactionIdIsCurrentTransactionId(PG_GETARG_TRANSACTIONID(0)));
}
