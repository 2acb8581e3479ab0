/*-------------------------------------------------------------------------
 *
 * model_cache.c
 *	  What the queue's row trigger (deferred.c) reads of the catalog for
 *	  every changed row: the models of the table, and the definition of
 *	  each deferred or async one; and whether the statement triggers
 *	  (trigger.c) of a table whose models are all queued have anything to
 *	  do.  A backend keeps both between its
 *	  transactions while no transaction has written unlearn.models since
 *	  (store/catalog_generation.c), so that a single-row statement on a busy
 *	  table pays two catalog queries and a subtransaction only after a
 *	  model changed.
 *
 * What is kept is copied out of SPI's memory into a context per entry,
 * under CacheMemoryContext: the table's model list, and a model's catalog
 * row, which each use decodes into a fresh definition in the caller's
 * memory (catalog_model_from_row: the checks of catalog_load_model, no
 * query, no subtransaction).  The row is the one load_model_keeping_row
 * read and found sound, in the same query; a quarantined model is not
 * kept.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"

typedef struct RelationModels
{
	Oid			relid;			/* key */
	uint64		generation;
	MemoryContext cxt;
	List	   *refs;			/* of ModelRef */
} RelationModels;

typedef struct KeptModel
{
	char		name[UNLEARN_MAX_NAME + 1]; /* key */
	uint64		generation;
	MemoryContext cxt;
	HeapTuple	row;			/* its unlearn.models row */
	TupleDesc	desc;
} KeptModel;

static HTAB *relations = NULL;
static HTAB *models = NULL;

static void
create_tables(void)
{
	HASHCTL		ctl;

	if (relations != NULL)
		return;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(RelationModels);
	ctl.hcxt = CacheMemoryContext;
	relations = hash_create("unlearn models of tables", 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = UNLEARN_MAX_NAME + 1;
	ctl.entrysize = sizeof(KeptModel);
	ctl.hcxt = CacheMemoryContext;
	models = hash_create("unlearn model definitions", 16, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
}

static MemoryContext
fresh_context(MemoryContext old)
{
	if (old != NULL)
		MemoryContextDelete(old);
	return AllocSetContextCreate(CacheMemoryContext, "unlearn kept catalog rows", ALLOCSET_SMALL_SIZES);
}

/* catalog_models_of_relation(relid), kept while the catalog is unchanged */
List *
cached_models_of_relation(Oid relid)
{
	uint64		now;
	RelationModels *entry;
	bool		found;
	List	   *refs;
	MemoryContext old;

	if (!catalog_generation_usable(&now))
		return catalog_models_of_relation(relid);
	create_tables();
	entry = hash_search(relations, &relid, HASH_ENTER, &found);
	if (found && entry->generation == now)
		return entry->refs;
	if (!found)
		entry->cxt = NULL;
	entry->refs = NIL;
	entry->generation = now - 1;	/* not valid until copied */
	refs = catalog_models_of_relation(relid);
	entry->cxt = fresh_context(entry->cxt);
	old = MemoryContextSwitchTo(entry->cxt);
	entry->refs = model_refs_copy(refs);
	MemoryContextSwitchTo(old);
	entry->generation = now;
	return refs;
}

/*
 * load_model_for_change(name, false), its row kept while the catalog is
 * unchanged.  A name longer than any model's is never kept.
 */
UnlearnModel *
cached_model_for_change(const char *name)
{
	uint64		now;
	KeptModel  *entry;
	bool		found;
	UnlearnModel *m;

	if (!catalog_generation_usable(&now) || strlen(name) > UNLEARN_MAX_NAME)
		return load_model_for_change(name, false);
	create_tables();
	entry = hash_search(models, name, HASH_ENTER, &found);
	if (found && entry->generation == now && entry->row != NULL)
		return catalog_model_from_row(name, entry->row, entry->desc);
	if (!found)
		entry->cxt = NULL;
	entry->row = NULL;
	entry->generation = now - 1;	/* not valid until kept */
	entry->cxt = fresh_context(entry->cxt);
	m = load_model_keeping_row(name, entry->cxt, &entry->row, &entry->desc);
	if (entry->row != NULL)
		entry->generation = now;
	return m;
}

static bool
has_immediate(List *refs)
{
	ListCell   *lc;

	foreach(lc, refs)
		if (!((ModelRef *) lfirst(lc))->deferred)
			return true;
	return false;
}

/*
 * Whether relid may have a model whose changes its statements apply (not
 * deferred or async): false only when the kept list, valid now, has none,
 * so that a statement on a table with only queued models reads nothing of
 * the catalog.  A list gone stale that had such a model is not read again
 * (true): its table's statements list the models anyway, and they write
 * the catalog, so the list would be stale at every statement.
 */
bool
cached_may_have_immediate_models(Oid relid)
{
	uint64		now;
	RelationModels *entry;

	if (!catalog_generation_usable(&now))
		return true;
	create_tables();
	entry = hash_search(relations, &relid, HASH_FIND, NULL);
	if (entry != NULL && entry->generation != now && has_immediate(entry->refs))
		return true;
	return has_immediate(cached_models_of_relation(relid));
}
