/*-------------------------------------------------------------------------
 *
 * writing_statements.c
 *	  The tables that statements of this backend are writing right now: an
 *	  executor hook records the result relations of every INSERT, UPDATE,
 *	  DELETE, MERGE (and SELECT with a data-modifying WITH) when it starts,
 *	  and forgets them when it ends (the utility hook records a COPY FROM
 *	  as writing every table), so that a function called inside such
 *	  a statement can tell that the statement is changing a table
 *	  (locks.c refuse_in_statement).  Unlike the table's pending trigger
 *	  events, this does not see deferred constraint checks of statements
 *	  that are over.
 *
 * An executor that an error abandons never reaches ExecutorEnd: its entry
 * goes with the subtransaction or transaction that aborts (one that
 * commits hands its entries to its parent, as trigger.c hands its pending
 * parts).  Cost: O(result
 * relations) per writing statement, nothing per row.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "access/xact.h"
#include "catalog/partition.h"
#include "executor/executor.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

typedef struct WritingStatement
{
	const void *query;			/* its QueryDesc, or NULL: a COPY FROM */
	uint64		copy;			/* a COPY FROM's number (writing_copy_begin) */
	SubTransactionId subxact;	/* where it started */
	int			nrelids;
	Oid			relids[FLEXIBLE_ARRAY_MEMBER];	/* its result relations */
} WritingStatement;

static uint64 copies = 0;		/* COPY FROM commands begun */

static List *writing = NIL;		/* of WritingStatement, in TopMemoryContext */
static ExecutorStart_hook_type prev_executor_start = NULL;
static ExecutorEnd_hook_type prev_executor_end = NULL;

static void
forget_statement(ListCell *cell)
{
	WritingStatement *ws = (WritingStatement *) lfirst(cell);

	writing = list_delete_cell(writing, cell);
	pfree(ws);
}

static void
writing_executor_start(QueryDesc *query, int eflags)
{
	PlannedStmt *stmt = query->plannedstmt;

	if (prev_executor_start)
		prev_executor_start(query, eflags);
	else
		standard_ExecutorStart(query, eflags);
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 && stmt->resultRelations != NIL)
	{
		WritingStatement *ws;
		ListCell   *lc;
		int			n = 0;
		MemoryContext old;

		ws = MemoryContextAlloc(TopMemoryContext,
								offsetof(WritingStatement, relids) +
								sizeof(Oid) * list_length(stmt->resultRelations));
		ws->query = query;
		ws->copy = 0;
		ws->subxact = GetCurrentSubTransactionId();
		foreach(lc, stmt->resultRelations)
			ws->relids[n++] = rt_fetch(lfirst_int(lc), stmt->rtable)->relid;
		ws->nrelids = n;
		old = MemoryContextSwitchTo(TopMemoryContext);
		writing = lappend(writing, ws);
		MemoryContextSwitchTo(old);
	}
}

static void
writing_executor_end(QueryDesc *query)
{
	ListCell   *lc;

	foreach(lc, writing)
		if (((WritingStatement *) lfirst(lc))->query == query)
		{
			forget_statement(lc);
			break;
		}
	if (prev_executor_end)
		prev_executor_end(query);
	else
		standard_ExecutorEnd(query);
}

static void
writing_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PREPARE)
	{
		list_free_deep(writing);
		writing = NIL;
	}
}

static void
writing_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, writing)
	{
		WritingStatement *ws = (WritingStatement *) lfirst(lc);

		if (ws->subxact != mySubid)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			ws->subxact = parentSubid;	/* still running, in the parent */
		else
		{
			pfree(ws);
			writing = foreach_delete_current(writing, lc);
		}
	}
}

/*
 * COPY FROM writes its table without the executor's start and end: the
 * utility hook (trigger.c) records it from before the command until after
 * it, as writing every table (its target is resolved by the command
 * itself, at a time and under locks of its own).  Returns the number that
 * writing_copy_end takes; a nested run of the same statement gets another.
 */
uint64
writing_copy_begin(void)
{
	WritingStatement *ws = MemoryContextAlloc(TopMemoryContext,
											  offsetof(WritingStatement, relids));
	MemoryContext old;

	ws->query = NULL;
	ws->copy = ++copies;
	ws->subxact = GetCurrentSubTransactionId();
	ws->nrelids = 0;
	old = MemoryContextSwitchTo(TopMemoryContext);
	writing = lappend(writing, ws);
	MemoryContextSwitchTo(old);
	return ws->copy;
}

/* the COPY FROM numbered copy ended (gone already if its subtransaction aborted) */
void
writing_copy_end(uint64 copy)
{
	ListCell   *lc;

	foreach(lc, writing)
		if (((WritingStatement *) lfirst(lc))->copy == copy)
		{
			forget_statement(lc);
			return;
		}
}

/*
 * Whether a statement of this backend is writing table root (a partition
 * root, or a table without partitions) or one of its partitions; a COPY
 * FROM in progress counts as writing every table.
 */
bool
statement_writing(Oid root)
{
	ListCell   *lc;
	int			i;

	foreach(lc, writing)
	{
		WritingStatement *ws = (WritingStatement *) lfirst(lc);

		if (ws->query == NULL)
			return true;		/* a COPY FROM: any table */
		for (i = 0; i < ws->nrelids; i++)
		{
			Oid			relid = ws->relids[i];

			if (relid == root ||
				(get_rel_relispartition(relid) &&
				 llast_oid(get_partition_ancestors(relid)) == root))
				return true;
		}
	}
	return false;
}

void
writing_statements_init(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = writing_executor_start;
	prev_executor_end = ExecutorEnd_hook;
	ExecutorEnd_hook = writing_executor_end;
	RegisterXactCallback(writing_xact_callback, NULL);
	RegisterSubXactCallback(writing_subxact_callback, NULL);
}
