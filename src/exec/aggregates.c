/*-------------------------------------------------------------------------
 *
 * aggregates.c
 *	  Training statistics as SQL aggregates: the loss and gradient at a
 *	  given w, the gradient and Hessian at w, and the Gram matrix, with C
 *	  transition, combine and final functions over a state type of their
 *	  own, unlearn.stats, so that they run in parallel workers and can be
 *	  merged across tables or nodes (a Citus or postgres_fdw fan-out).
 *
 * For rows (x_i, y_i), x_i in R^p, at w (certified-removal.md §1):
 *
 *	loss	 sum_i l(w.x_i, y_i)
 *	gradient sum_i l'(w.x_i, y_i) x_i
 *	Hessian  sum_i l''(w.x_i, y_i) x_i x_i'
 *	Gram	 sum_i x_i x_i'
 *
 * with l of loss.c: logistic (y in {-1, +1}) or squared.  They are the
 * data terms only: the objective's (Lambda/2)||w||^2 + b.w is the
 * caller's.  Matrices are kept as the lower triangle, packed by columns
 * (as linalg.c and BLAS's dspr), and a row costs O(p) for the gradient and
 * O(p^2) for a matrix.
 *
 * The state (a varlena, never internal) is a header, then w (p doubles,
 * none for Gram), the gradient (p, none for Gram) and the packed matrix
 * (p(p+1)/2, none for the gradient alone).  Its text form is "ulstats1:"
 * and the base64 of those bytes; its binary form is the bytes.  Both are
 * checked in full when read: a state is input a role may write.  Two
 * states combine only if they have the same kind, loss, p and w.
 *
 * Transition and combine functions update the state in place when called
 * as aggregates, allocating it in the aggregate's context on the first row.
 *
 * Batching.  A matrix state started by a transition function (p up to
 * BATCH_MAX_P) is an expanded object (utils/expandeddatum.h): the matrix
 * is held full, and rows are buffered, then added a block at a time:
 *
 *	z = X'w, gradient += X l'(z)	(two DGEMV)
 *	matrix += X diag(l''(z)) X'		(one DSYRK, BLAS-3)
 *
 * for the block's rows X (p x b).  A row then costs O(p^2) at BLAS-3
 * speed instead of one DSPR's memory-bound O(p^2).  Whenever PostgreSQL
 * needs the value itself (a partial aggregate's result sent to the leader,
 * a final or combine function's argument, a copy) it flattens the object,
 * which adds the buffered rows first; the flat form is the one above and
 * never holds a buffer.  A flat state given to a transition function
 * (should the executor have copied one) is updated a row at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include <cblas.h>

#include "catalog/pg_type.h"
#include "common/base64.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/expandeddatum.h"
#include "utils/memutils.h"

#define STATS_MAGIC 0x756c7331	/* "uls1" */
#define STATS_TEXT_PREFIX "ulstats1:"
/* a packed p x p matrix stays well under the 1 GB varlena limit */
#define STATS_MAX_P 10000
/* the largest p whose full p x p matrix (128 MB) a batched state holds */
#define BATCH_MAX_P 4096
/* the most bytes of buffered rows in a batched state, and bounds in rows */
#define BATCH_BYTES (1 << 20)
#define BATCH_MIN_ROWS 16
#define BATCH_MAX_ROWS 256

typedef enum StatsKind
{
	STATS_GRADIENT = 1,			/* loss and gradient at w */
	STATS_HESSIAN = 2,			/* loss, gradient and Hessian at w */
	STATS_GRAM = 3				/* sum of x x' */
} StatsKind;

typedef struct StatsHeader
{
	int32		vl_len_;
	int32		magic;
	int32		kind;
	int32		loss;			/* UnlearnLoss; 0 for Gram */
	int32		p;
	int32		unused;
	int64		rows;
	double		loss_sum;
	/* then w[p], gradient[p], matrix[p(p+1)/2], as the kind has them */
} StatsHeader;

static const char *const kind_names[] = {NULL, "gradient", "hessian", "gram"};

/* a matrix state being built by a transition function: see Batching */
typedef struct BatchedStats
{
	ExpandedObjectHeader hdr;
	StatsHeader *head;			/* header, w and gradient; no matrix part */
	double	   *matrix;			/* p x p, column-major, lower triangle used */
	double	   *block;			/* buffered rows: p x capacity, column-major */
	double	   *targets;		/* their y, then their l'' */
	double	   *scratch;		/* their z, then their l' */
	int			buffered;
	int			capacity;
} BatchedStats;

static Size batched_flat_size(ExpandedObjectHeader *eoh);
static void batched_flatten(ExpandedObjectHeader *eoh, void *result, Size size);

static const ExpandedObjectMethods batched_methods = {
	batched_flat_size,
	batched_flatten
};

static bool
kind_has_gradient(int kind)
{
	return kind == STATS_GRADIENT || kind == STATS_HESSIAN;
}

static bool
kind_has_matrix(int kind)
{
	return kind == STATS_HESSIAN || kind == STATS_GRAM;
}

static Size
stats_doubles(int kind, int p)
{
	return (kind_has_gradient(kind) ? 2 * (Size) p : 0) +
		(kind_has_matrix(kind) ? PACKED_SIZE(p) : 0);
}

static Size
stats_size(int kind, int p)
{
	return sizeof(StatsHeader) + sizeof(double) * stats_doubles(kind, p);
}

/* the header, w and gradient: a state without its matrix */
static Size
stats_head_size(int kind, int p)
{
	return sizeof(StatsHeader) + sizeof(double) * (kind_has_gradient(kind) ? 2 * (Size) p : 0);
}

static double *
stats_w(StatsHeader *s)
{
	return (double *) (s + 1);
}

static double *
stats_gradient(StatsHeader *s)
{
	return stats_w(s) + s->p;
}

static double *
stats_matrix(StatsHeader *s)
{
	return (double *) (s + 1) + (kind_has_gradient(s->kind) ? 2 * (Size) s->p : 0);
}

static void
corrupt_stats(const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("invalid unlearn.stats value: %s", why),
			 errhint("Use a value an unlearn aggregate returned, unchanged.")));
}

/*
 * Check a state read from outside (text, binary, or a datum a query
 * built): its header fits its size and every number is finite.
 */
static void
check_stats(StatsHeader *s, Size size)
{
	Size		n;
	Size		i;
	double	   *v;

	if (size < sizeof(StatsHeader) || s->magic != STATS_MAGIC)
		corrupt_stats("not a state of this version");
	if (s->kind < STATS_GRADIENT || s->kind > STATS_GRAM)
		corrupt_stats("unknown kind");
	if (s->kind == STATS_GRAM ? s->loss != 0 :
		(s->loss != LOSS_LOGISTIC && s->loss != LOSS_SQUARED))
		corrupt_stats("unknown loss");
	if (s->p < 1 || s->p > STATS_MAX_P || s->rows < 0 || s->unused != 0)
		corrupt_stats("dimensions out of range");
	if (size != stats_size(s->kind, s->p))
		corrupt_stats("its length does not match its dimensions");
	n = stats_doubles(s->kind, s->p);
	v = (double *) (s + 1);
	if (!isfinite(s->loss_sum))
		corrupt_stats("a number is not finite");
	for (i = 0; i < n; i++)
		if (!isfinite(v[i]))
			corrupt_stats("a number is not finite");
}

static StatsHeader *
stats_arg(FunctionCallInfo fcinfo, int argno)
{
	StatsHeader *s = (StatsHeader *) PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));

	check_stats(s, VARSIZE(s));
	return s;
}

/* whether a is the float8[] of the p values v */
static bool
same_vector(ArrayType *a, const double *v, int p)
{
	return ARR_NDIM(a) == 1 && !ARR_HASNULL(a) && ARR_ELEMTYPE(a) == FLOAT8OID &&
		ARR_DIMS(a)[0] == p && memcmp(ARR_DATA_PTR(a), v, sizeof(double) * p) == 0;
}

/* a float8[] argument of p finite values (p < 0: any length, set) */
static const double *
vector_arg(ArrayType *a, int *p, const char *what)
{
	int			n;
	int			i;
	const double *v;

	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional float8 array without nulls", what)));
	n = ARR_DIMS(a)[0];
	if (*p >= 0 && n != *p)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s has %d elements where the aggregate has %d", what, n, *p),
				 errhint("Every row's x and w need the same length.")));
	if (n < 1 || n > STATS_MAX_P)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must have 1 to %d elements", what, STATS_MAX_P)));
	v = (const double *) ARR_DATA_PTR(a);
	for (i = 0; i < n; i++)
		if (!isfinite(v[i]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("%s must hold finite numbers", what),
					 errhint("Filter out or fix rows with NaN or infinite values.")));
	*p = n;
	return v;
}

static MemoryContext
aggregate_context(FunctionCallInfo fcinfo, const char *fn)
{
	MemoryContext aggcontext;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s may be called only as an aggregate's support function", fn)));
	return aggcontext;
}

static StatsHeader *
new_stats(MemoryContext cxt, int kind, UnlearnLoss loss, int p)
{
	Size		size = stats_size(kind, p);
	StatsHeader *s = MemoryContextAllocZero(cxt, size);

	SET_VARSIZE(s, size);
	s->magic = STATS_MAGIC;
	s->kind = kind;
	s->loss = kind == STATS_GRAM ? 0 : loss;
	s->p = p;
	return s;
}

static UnlearnLoss
loss_arg(text *t)
{
	char	   *name = text_to_cstring(t);

	if (strcmp(name, "logistic") == 0)
		return LOSS_LOGISTIC;
	if (strcmp(name, "squared") == 0)
		return LOSS_SQUARED;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("loss must be 'logistic' or 'squared'")));
	return LOSS_LOGISTIC;		/* keep compiler quiet */
}

static void
require_arguments(FunctionCallInfo fcinfo, int from, int to)
{
	int			i;

	for (i = from; i <= to; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("an unlearn aggregate's x, y, w and loss must not be null"),
					 errhint("Leave rows with nulls out, e.g. with FILTER (WHERE ... IS NOT NULL).")));
}

static BatchedStats *
new_batched(MemoryContext aggcontext, int kind, UnlearnLoss loss, int p, const double *w)
{
	MemoryContext cxt = AllocSetContextCreate(aggcontext, "unlearn stats batch",
											  ALLOCSET_SMALL_SIZES);
	BatchedStats *b = MemoryContextAllocZero(cxt, sizeof(BatchedStats));

	EOH_init_header(&b->hdr, &batched_methods, cxt);
	b->head = MemoryContextAllocZero(cxt, stats_head_size(kind, p));
	b->head->magic = STATS_MAGIC;
	b->head->kind = kind;
	b->head->loss = kind == STATS_GRAM ? 0 : loss;
	b->head->p = p;
	if (w != NULL)
		memcpy(stats_w(b->head), w, sizeof(double) * p);
	b->matrix = MemoryContextAllocHuge(cxt, sizeof(double) * (Size) p * p);
	memset(b->matrix, 0, sizeof(double) * (Size) p * p);
	b->capacity = BATCH_MIN_ROWS;
	b->block = MemoryContextAlloc(cxt, sizeof(double) * (Size) p * b->capacity);
	b->targets = MemoryContextAlloc(cxt, sizeof(double) * b->capacity);
	b->scratch = MemoryContextAlloc(cxt, sizeof(double) * b->capacity);
	return b;
}

/* our read-write expanded state, or NULL for anything else */
static BatchedStats *
batched_state(Datum d)
{
	ExpandedObjectHeader *eoh;

	if (!VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(d)))
		return NULL;
	eoh = DatumGetEOHP(d);
	return eoh->eoh_methods == &batched_methods ? (BatchedStats *) eoh : NULL;
}

/* add the buffered rows to the sums (see Batching) */
static void
flush_block(BatchedStats *b)
{
	StatsHeader *s = b->head;
	int			p = s->p;
	int			n = b->buffered;
	double		alpha = 1.0;
	int			i;

	if (n == 0)
		return;
	if (s->kind != STATS_GRAM)
	{
		UnlearnLoss loss = (UnlearnLoss) s->loss;

		memset(b->scratch, 0, sizeof(double) * n);	/* BLAS may scale it by beta */
		cblas_dgemv(CblasColMajor, CblasTrans, p, n, 1.0, b->block, p,
					stats_w(s), 1, 0.0, b->scratch, 1);
		for (i = 0; i < n; i++)
		{
			double		z = b->scratch[i];
			double		y = b->targets[i];

			s->loss_sum += loss_value(loss, z, y);
			b->scratch[i] = loss_d1(loss, z, y);
			b->targets[i] = loss_d2(loss, z, y);
		}
		cblas_dgemv(CblasColMajor, CblasNoTrans, p, n, 1.0, b->block, p,
					b->scratch, 1, 1.0, stats_gradient(s), 1);
		if (loss == LOSS_SQUARED)
			alpha = 2.0;		/* l'' is the constant 2 */
		else if (s->kind == STATS_HESSIAN)
			for (i = 0; i < n; i++)
				cblas_dscal(p, sqrt(b->targets[i]), b->block + (Size) i * p, 1);
	}
	if (kind_has_matrix(s->kind))
		cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, p, n, alpha,
					b->block, p, 1.0, b->matrix, p);
	s->rows += n;
	b->buffered = 0;
}

/*
 * Buffer a row; a full block is added to the sums, and the block then
 * doubles, up to BATCH_BYTES, so that a state with few rows (one group of
 * many) stays small.
 */
static void
buffer_row(BatchedStats *b, const double *x, double y)
{
	int			p = b->head->p;
	int			limit = Max(BATCH_MIN_ROWS, Min(BATCH_MAX_ROWS, BATCH_BYTES / (int) (sizeof(double) * p)));

	memcpy(b->block + (Size) b->buffered * p, x, sizeof(double) * p);
	b->targets[b->buffered] = y;
	if (++b->buffered < b->capacity)
		return;
	flush_block(b);
	if (b->capacity < limit)
	{
		b->capacity = Min(2 * b->capacity, limit);
		b->block = repalloc(b->block, sizeof(double) * (Size) p * b->capacity);
		b->targets = repalloc(b->targets, sizeof(double) * b->capacity);
		b->scratch = repalloc(b->scratch, sizeof(double) * b->capacity);
	}
}

static Size
batched_flat_size(ExpandedObjectHeader *eoh)
{
	BatchedStats *b = (BatchedStats *) eoh;

	return stats_size(b->head->kind, b->head->p);
}

/* the flat form: the buffered rows added, the matrix packed */
static void
batched_flatten(ExpandedObjectHeader *eoh, void *result, Size size)
{
	BatchedStats *b = (BatchedStats *) eoh;
	StatsHeader *s = (StatsHeader *) result;

	Assert(size == stats_size(b->head->kind, b->head->p));
	flush_block(b);
	memcpy(s, b->head, stats_head_size(b->head->kind, b->head->p));
	SET_VARSIZE(s, size);
	packed_from_full(b->matrix, s->p, stats_matrix(s));
}

/*
 * A transition function's first state: batched when it holds a matrix of
 * at most BATCH_MAX_P columns (*b set), flat otherwise.  w is NULL for Gram.
 */
static StatsHeader *
start_state(MemoryContext aggcontext, int kind, UnlearnLoss loss, int p, const double *w,
			BatchedStats **b)
{
	StatsHeader *s;

	if (kind_has_matrix(kind) && p <= BATCH_MAX_P)
		return (*b = new_batched(aggcontext, kind, loss, p, w))->head;
	s = new_stats(aggcontext, kind, loss, p);
	if (w != NULL)
		memcpy(stats_w(s), w, sizeof(double) * p);
	return s;
}

/*
 * The header of a transition function's state: a flat state updated in
 * place, or a batched one.  NULL when there is none yet.
 */
static StatsHeader *
transition_state(FunctionCallInfo fcinfo, MemoryContext aggcontext, BatchedStats **batched)
{
	Datum		d;

	*batched = NULL;
	if (PG_ARGISNULL(0))
		return NULL;
	d = PG_GETARG_DATUM(0);
	if ((*batched = batched_state(d)) != NULL)
		return (*batched)->head;
	if (VARATT_IS_EXTERNAL(DatumGetPointer(d)) || VARATT_IS_COMPRESSED(DatumGetPointer(d)) ||
		VARATT_IS_SHORT(DatumGetPointer(d)))
	{
		/* not one of ours to update in place: take a flat copy */
		MemoryContext old = MemoryContextSwitchTo(aggcontext);
		StatsHeader *s = (StatsHeader *) PG_DETOAST_DATUM_COPY(d);

		MemoryContextSwitchTo(old);
		check_stats(s, VARSIZE(s));
		return s;
	}
	return (StatsHeader *) DatumGetPointer(d);
}

/*
 * Transition of the gradient and Hessian aggregates:
 * (state, x float8[], y float8, w float8[], loss text).
 */
static Datum
add_row(FunctionCallInfo fcinfo, int kind, const char *fn)
{
	MemoryContext aggcontext = aggregate_context(fcinfo, fn);
	BatchedStats *b;
	StatsHeader *s = transition_state(fcinfo, aggcontext, &b);
	const double *x;
	const double *w;
	double		y,
				z,
				d1;
	int			p;
	UnlearnLoss loss;

	require_arguments(fcinfo, 1, 4);
	loss = loss_arg(PG_GETARG_TEXT_PP(4));
	y = PG_GETARG_FLOAT8(2);
	if (!isfinite(y) || (loss == LOSS_LOGISTIC && y != 1.0 && y != -1.0))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("y must be %s", loss == LOSS_LOGISTIC ? "-1 or 1 for the logistic loss" : "finite")));
	p = s == NULL ? -1 : s->p;
	if (s != NULL && s->kind == kind && s->loss == (int32) loss &&
		same_vector(PG_GETARG_ARRAYTYPE_P(3), stats_w(s), p))
		w = stats_w(s);			/* checked finite when the state began */
	else
		w = vector_arg(PG_GETARG_ARRAYTYPE_P(3), &p, "w");
	x = vector_arg(PG_GETARG_ARRAYTYPE_P(1), &p, "x");
	if (s == NULL)
		s = start_state(aggcontext, kind, loss, p, w, &b);
	else if (s->kind != kind)
		corrupt_stats("a transition function was given a state of another kind");
	else if (w != stats_w(s) &&
			 (s->loss != (int32) loss || memcmp(stats_w(s), w, sizeof(double) * p) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("every row of an unlearn aggregate needs the same w and loss"),
				 errhint("Pass w and loss as constants or query parameters.")));
	if (b != NULL)
	{
		buffer_row(b, x, y);
		PG_RETURN_DATUM(EOHPGetRWDatum(&b->hdr));
	}
	z = vec_dot(x, w, p);
	d1 = loss_d1(loss, z, y);
	s->rows++;
	s->loss_sum += loss_value(loss, z, y);
	cblas_daxpy(p, d1, x, 1, stats_gradient(s), 1);
	if (kind == STATS_HESSIAN)
		cblas_dspr(CblasColMajor, CblasLower, p, loss_d2(loss, z, y), x, 1, stats_matrix(s));
	PG_RETURN_POINTER(s);
}

PG_FUNCTION_INFO_V1(unlearn_stats_gradient_add);
Datum
unlearn_stats_gradient_add(PG_FUNCTION_ARGS)
{
	return add_row(fcinfo, STATS_GRADIENT, "unlearn._stats_gradient_add");
}

PG_FUNCTION_INFO_V1(unlearn_stats_hessian_add);
Datum
unlearn_stats_hessian_add(PG_FUNCTION_ARGS)
{
	return add_row(fcinfo, STATS_HESSIAN, "unlearn._stats_hessian_add");
}

/* transition of the Gram aggregate: (state, x float8[]) */
PG_FUNCTION_INFO_V1(unlearn_stats_gram_add);
Datum
unlearn_stats_gram_add(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = aggregate_context(fcinfo, "unlearn._stats_gram_add");
	BatchedStats *b;
	StatsHeader *s = transition_state(fcinfo, aggcontext, &b);
	const double *x;
	int			p;

	require_arguments(fcinfo, 1, 1);
	p = s == NULL ? -1 : s->p;
	x = vector_arg(PG_GETARG_ARRAYTYPE_P(1), &p, "x");
	if (s == NULL)
		s = start_state(aggcontext, STATS_GRAM, LOSS_LOGISTIC, p, NULL, &b);
	else if (s->kind != STATS_GRAM)
		corrupt_stats("a transition function was given a state of another kind");
	if (b != NULL)
	{
		buffer_row(b, x, 0.0);
		PG_RETURN_DATUM(EOHPGetRWDatum(&b->hdr));
	}
	s->rows++;
	cblas_dspr(CblasColMajor, CblasLower, p, 1.0, x, 1, stats_matrix(s));
	PG_RETURN_POINTER(s);
}

/*
 * Combine: add the second state into the first (in place), or copy it
 * when the first is empty.  Also the transition of unlearn_merge, whose
 * inputs may come from anywhere, so the second is checked in full.
 */
PG_FUNCTION_INFO_V1(unlearn_stats_combine);
Datum
unlearn_stats_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext = aggregate_context(fcinfo, "unlearn._stats_combine");
	BatchedStats *b;
	StatsHeader *s = transition_state(fcinfo, aggcontext, &b);
	StatsHeader *t;
	Size		n;

	if (PG_ARGISNULL(1))
	{
		if (s == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s);
	}
	if (b != NULL)
	{
		/* a batched state as the first argument: continue on its flat form */
		Size		size = EOH_get_flat_size(&b->hdr);

		s = MemoryContextAlloc(aggcontext, size);
		EOH_flatten_into(&b->hdr, s, size);
	}
	t = stats_arg(fcinfo, 1);
	if (s == NULL)
	{
		s = MemoryContextAlloc(aggcontext, VARSIZE(t));
		memcpy(s, t, VARSIZE(t));
		PG_RETURN_POINTER(s);
	}
	if (s->kind != t->kind || s->loss != t->loss || s->p != t->p)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot merge unlearn.stats of different kinds, losses or dimensions"),
				 errdetail("One is %s with %d elements, the other %s with %d.",
						   kind_names[s->kind], s->p, kind_names[t->kind], t->p)));
	if (kind_has_gradient(s->kind) &&
		memcmp(stats_w(s), stats_w(t), sizeof(double) * s->p) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot merge unlearn.stats taken at different w"),
				 errhint("Every partial aggregate of one pass needs the same w.")));
	s->rows += t->rows;
	s->loss_sum += t->loss_sum;
	n = kind_has_matrix(s->kind) ? PACKED_SIZE(s->p) : 0;
	if (kind_has_gradient(s->kind))
		cblas_daxpy(s->p, 1.0, stats_gradient(t), 1, stats_gradient(s), 1);
	if (n > 0)
		cblas_daxpy((int) n, 1.0, stats_matrix(t), 1, stats_matrix(s), 1);
	PG_RETURN_POINTER(s);
}

/* the packed lower triangle as a full symmetric p x p float8[][] */
static ArrayType *
matrix_array(const double *packed, int p)
{
	double	   *full = palloc(sizeof(double) * (Size) p * p);
	Datum	   *d = palloc(sizeof(Datum) * (Size) p * p);
	int			dims[2] = {p, p};
	int			lbs[2] = {1, 1};
	int			i,
				j;

	full_from_packed(packed, p, full);	/* the lower triangle, by columns */
	for (j = 0; j < p; j++)
		for (i = j; i < p; i++)
			d[(Size) i * p + j] = d[(Size) j * p + i] = Float8GetDatum(full[(Size) j * p + i]);
	return construct_md_array(d, NULL, 2, dims, lbs, FLOAT8OID, sizeof(double),
							  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

static ArrayType *
vector_array(const double *v, int p)
{
	Datum	   *d = palloc(sizeof(Datum) * p);
	int			i;

	for (i = 0; i < p; i++)
		d[i] = Float8GetDatum(v[i]);
	return construct_array(d, p, FLOAT8OID, sizeof(double), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

/*
 * unlearn_stats_values(unlearn.stats) -> unlearn.stats_values (kind, loss,
 * rows, loss_sum, gradient, matrix): the final function of the aggregates
 * and a reader of partial states.  NULL (no row) gives NULL.
 */
PG_FUNCTION_INFO_V1(unlearn_stats_values);
Datum
unlearn_stats_values(PG_FUNCTION_ARGS)
{
	StatsHeader *s;
	TupleDesc	desc;
	Datum		v[6];
	bool		nulls[6] = {false, false, false, false, false, false};

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = stats_arg(fcinfo, 0);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "unlearn_stats_values must return a composite");
	desc = BlessTupleDesc(desc);
	v[0] = CStringGetTextDatum(kind_names[s->kind]);
	if (s->kind == STATS_GRAM)
		nulls[1] = nulls[3] = nulls[4] = true;
	else
	{
		v[1] = CStringGetTextDatum(s->loss == LOSS_SQUARED ? "squared" : "logistic");
		v[3] = Float8GetDatum(s->loss_sum);
		v[4] = PointerGetDatum(vector_array(stats_gradient(s), s->p));
	}
	v[2] = Int64GetDatum(s->rows);
	if (kind_has_matrix(s->kind))
		v[5] = PointerGetDatum(matrix_array(stats_matrix(s), s->p));
	else
		nulls[5] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, v, nulls)));
}

/* text form: the prefix and the base64 of the bytes after the length word */
PG_FUNCTION_INFO_V1(unlearn_stats_out);
Datum
unlearn_stats_out(PG_FUNCTION_ARGS)
{
	StatsHeader *s = stats_arg(fcinfo, 0);
	int			len = VARSIZE(s) - VARHDRSZ;
	int			prefix = strlen(STATS_TEXT_PREFIX);
	int			room = pg_b64_enc_len(len);
	char	   *out = palloc(prefix + room + 1);
	int			written;

	memcpy(out, STATS_TEXT_PREFIX, prefix);
	written = pg_b64_encode((const char *) s + VARHDRSZ, len, out + prefix, room);
	if (written < 0)
		elog(ERROR, "could not encode an unlearn.stats value");
	out[prefix + written] = '\0';
	PG_RETURN_CSTRING(out);
}

PG_FUNCTION_INFO_V1(unlearn_stats_in);
Datum
unlearn_stats_in(PG_FUNCTION_ARGS)
{
	const char *in = PG_GETARG_CSTRING(0);
	int			prefix = strlen(STATS_TEXT_PREFIX);
	int			inlen;
	int			room;
	int			len;
	char	   *buf;

	if (strncmp(in, STATS_TEXT_PREFIX, prefix) != 0)
		corrupt_stats("its text does not start with \"" STATS_TEXT_PREFIX "\"");
	in += prefix;
	inlen = strlen(in);
	room = pg_b64_dec_len(inlen);
	if (room > (int) stats_size(STATS_GRAM, STATS_MAX_P) + 8)
		corrupt_stats("its text is too long");
	buf = palloc(VARHDRSZ + room);
	len = pg_b64_decode(in, inlen, buf + VARHDRSZ, room);
	if (len < 0)
		corrupt_stats("its text is not base64");
	SET_VARSIZE(buf, VARHDRSZ + len);
	check_stats((StatsHeader *) buf, VARHDRSZ + len);
	PG_RETURN_POINTER(buf);
}

/* binary form: the same bytes, raw */
PG_FUNCTION_INFO_V1(unlearn_stats_send);
Datum
unlearn_stats_send(PG_FUNCTION_ARGS)
{
	StatsHeader *s = stats_arg(fcinfo, 0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendbytes(&buf, (const char *) s + VARHDRSZ, VARSIZE(s) - VARHDRSZ);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

PG_FUNCTION_INFO_V1(unlearn_stats_recv);
Datum
unlearn_stats_recv(PG_FUNCTION_ARGS)
{
	StringInfo	msg = (StringInfo) PG_GETARG_POINTER(0);
	int			len = msg->len - msg->cursor;
	char	   *buf;

	if (len < 0 || (Size) len > stats_size(STATS_GRAM, STATS_MAX_P))
		corrupt_stats("its length is out of range");
	buf = palloc(VARHDRSZ + len);
	pq_copymsgbytes(msg, buf + VARHDRSZ, len);
	SET_VARSIZE(buf, VARHDRSZ + len);
	check_stats((StatsHeader *) buf, VARHDRSZ + len);
	PG_RETURN_POINTER(buf);
}

/*
 * The sums of a state a training pass's query returned (train_pass.c),
 * checked in full like any other.  The pointers point into the state.
 */
void
stats_view(Datum d, StatsView *view)
{
	StatsHeader *s = (StatsHeader *) PG_DETOAST_DATUM(d);

	check_stats(s, VARSIZE(s));
	view->hessian = s->kind == STATS_HESSIAN;
	view->p = s->p;
	view->rows = s->rows;
	view->loss_sum = s->loss_sum;
	view->w = kind_has_gradient(s->kind) ? stats_w(s) : NULL;
	view->gradient = kind_has_gradient(s->kind) ? stats_gradient(s) : NULL;
	view->matrix = kind_has_matrix(s->kind) ? stats_matrix(s) : NULL;
}
