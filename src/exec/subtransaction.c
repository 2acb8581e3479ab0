/*-------------------------------------------------------------------------
 *
 * subtransaction.c
 *	  Running a piece of work so that some of its errors can be survived,
 *	  as a PL/pgSQL exception block does: in an internal subtransaction,
 *	  rolled back on error, with the caller's memory context and resource
 *	  owner restored either way.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

/*
 * Run work(arg) in a subtransaction.  Returns NULL if it returned; if it
 * raised an error that survivable(edata, arg) accepts, the subtransaction
 * is rolled back and the error returned (in the caller's memory context);
 * any other error is raised again after the rollback.  What work
 * allocates in the caller's memory context stays, as with any call.
 */
ErrorData *
run_in_subtransaction(void (*work) (void *arg), void *arg,
					  bool (*survivable) (const ErrorData *edata, void *arg))
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile failure = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		work(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		bool		survived;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		/* asked before the rollback, while work's state is as it failed */
		survived = survivable(edata, arg);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		if (!survived)
			ReThrowError(edata);
		failure = edata;
	}
	PG_END_TRY();
	return failure;
}
