/*-------------------------------------------------------------------------
 *
 * column_moments.c
 *	  The mean and variance of each feature column over a table's rows, as
 *	  a parallel SQL aggregate: unlearn._column_moments(x float8[], columns
 *	  int4), the first pass of a 'standardize' training (train_pass.c,
 *	  column_map.c).
 *
 * x holds the raw values of one row; column c is the run of elements
 * [c q, (c + 1) q) with q = length / columns (one column: a pooled array
 * column).  A NaN element is a missing value ("nulls": "impute"): it is
 * left out of its column, so each column keeps its own count n.  Per
 * column the state keeps n, a shift K (the first value counted) and the
 * shifted sums
 *
 *	 S1 = sum (x - K),   S2 = sum (x - K)^2
 *
 * in long double, so that no finite double overflows them and the mean
 * and variance lose only about log10(n) digits of 19 to cancellation.
 * Two states combine column by column by moving one's sums to the other's
 * shift: sum (x - K') = S1 + n (K - K'), sum (x - K')^2 = S2 + 2 (K - K')
 * S1 + n (K - K')^2.
 *
 * The state is a bytea that only these functions write: EXECUTE on the
 * transition, combine and final functions is revoked from PUBLIC, and
 * each checks the state's length against its header.
 *
 * Cost: O(length of x) per row, O(columns) per combine.
 *
 *-------------------------------------------------------------------------
 */
#include "exec/exec.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/array.h"

typedef struct MomentsState
{
	int32		vl_len_;
	int32		columns;
	/* then n, shift, S1 and S2: columns long doubles each */
} MomentsState;

/* the state's arrays, each columns long */
enum
{
	MOMENT_COUNT,
	MOMENT_SHIFT,
	MOMENT_S1,
	MOMENT_S2,
	MOMENT_ARRAYS
};

static Size
moments_size(int columns)
{
	return sizeof(MomentsState) + sizeof(long double) * MOMENT_ARRAYS * (Size) columns;
}

static long double *
moments_array(MomentsState *s, int which)
{
	return (long double *) (s + 1) + (Size) which * s->columns;
}

/*
 * A running state (the first argument of the transition and combine
 * functions), checked for its shape: any role may call them in an
 * aggregate of its own, whose initial state is any bytea.  A state this
 * file allocated is plain and passes as it is, so it is updated in place.
 */
static MomentsState *
moments_running(FunctionCallInfo fcinfo)
{
	MomentsState *s = (MomentsState *) PG_DETOAST_DATUM(PG_GETARG_DATUM(0));

	if (VARSIZE(s) < sizeof(MomentsState) || s->columns < 1 ||
		s->columns > UNLEARN_MAX_DIMS || VARSIZE(s) != moments_size(s->columns))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid column moments state")));
	return s;
}

static MomentsState *
moments_arg(FunctionCallInfo fcinfo, int argno)
{
	MomentsState *s = (MomentsState *) PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));
	int			c;

	if (VARSIZE(s) < sizeof(MomentsState) || s->columns < 1 ||
		s->columns > UNLEARN_MAX_DIMS || VARSIZE(s) != moments_size(s->columns))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid column moments state")));
	for (c = 0; c < s->columns; c++)
		if (!(moments_array(s, MOMENT_COUNT)[c] >= 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid column moments state")));
	return s;
}

/* transition: (state, x float8[], columns int4) */
PG_FUNCTION_INFO_V1(unlearn_moments_add);
Datum
unlearn_moments_add(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	MomentsState *s = PG_ARGISNULL(0) ? NULL : moments_running(fcinfo);
	ArrayType  *a;
	const double *x;
	long double *count,
			   *shift,
			   *s1,
			   *s2;
	int			columns,
				per,
				n,
				c,
				e;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "unlearn._moments_add called outside an aggregate");
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
	{
		/* a null row adds nothing; with no state yet, there is none */
		if (s == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s);
	}
	a = PG_GETARG_ARRAYTYPE_P(1);
	columns = PG_GETARG_INT32(2);
	if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID ||
		columns < 1 || columns > UNLEARN_MAX_DIMS || ARR_DIMS(a)[0] % columns != 0 ||
		(s != NULL && s->columns != columns))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("column moments need rows of the same whole number of values per column")));
	n = ARR_DIMS(a)[0];
	per = n / columns;
	x = (const double *) ARR_DATA_PTR(a);
	if (s == NULL)
	{
		s = MemoryContextAllocZero(aggcontext, moments_size(columns));
		SET_VARSIZE(s, moments_size(columns));
		s->columns = columns;
	}
	count = moments_array(s, MOMENT_COUNT);
	shift = moments_array(s, MOMENT_SHIFT);
	s1 = moments_array(s, MOMENT_S1);
	s2 = moments_array(s, MOMENT_S2);
	for (c = 0; c < columns; c++)
		for (e = 0; e < per; e++)
		{
			double		v = x[(Size) c * per + e];
			long double t;

			if (isnan(v))
				continue;		/* missing */
			if (count[c] == 0)
				shift[c] = v;
			t = v - shift[c];
			s1[c] += t;
			s2[c] += t * t;
			count[c] += 1;
		}
	PG_RETURN_POINTER(s);
}

/* combine: move the second state's sums to the first's shift and add */
PG_FUNCTION_INFO_V1(unlearn_moments_combine);
Datum
unlearn_moments_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggcontext;
	MomentsState *s = PG_ARGISNULL(0) ? NULL : moments_running(fcinfo);
	MomentsState *t;
	int			c;

	if (!AggCheckCallContext(fcinfo, &aggcontext))
		elog(ERROR, "unlearn._moments_combine called outside an aggregate");
	if (PG_ARGISNULL(1))
	{
		if (s == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s);
	}
	t = moments_arg(fcinfo, 1);
	if (s == NULL)
	{
		s = MemoryContextAlloc(aggcontext, VARSIZE(t));
		memcpy(s, t, VARSIZE(t));
		PG_RETURN_POINTER(s);
	}
	if (s->columns != t->columns)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot combine column moments of different widths")));
	for (c = 0; c < s->columns; c++)
	{
		long double *sn = moments_array(s, MOMENT_COUNT) + c,
				   *sk = moments_array(s, MOMENT_SHIFT) + c,
				   *s1 = moments_array(s, MOMENT_S1) + c,
				   *s2 = moments_array(s, MOMENT_S2) + c;
		long double tn = moments_array(t, MOMENT_COUNT)[c],
					tk = moments_array(t, MOMENT_SHIFT)[c],
					t1 = moments_array(t, MOMENT_S1)[c],
					t2 = moments_array(t, MOMENT_S2)[c];
		long double d;

		if (tn == 0)
			continue;
		if (*sn == 0)
		{
			*sn = tn;
			*sk = tk;
			*s1 = t1;
			*s2 = t2;
			continue;
		}
		d = tk - *sk;
		*s2 += t2 + 2 * d * t1 + tn * d * d;
		*s1 += t1 + tn * d;
		*sn += tn;
	}
	PG_RETURN_POINTER(s);
}

/*
 * final: float8[] of each column's count, then its mean, then its standard
 * deviation (0 and 0 for a column without values)
 */
PG_FUNCTION_INFO_V1(unlearn_moments_final);
Datum
unlearn_moments_final(PG_FUNCTION_ARGS)
{
	MomentsState *s;
	double	   *out;
	int			columns,
				c;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = moments_arg(fcinfo, 0);
	columns = s->columns;
	out = palloc0(sizeof(double) * 3 * (Size) columns);
	for (c = 0; c < columns; c++)
	{
		long double n = moments_array(s, MOMENT_COUNT)[c];
		long double mean_offset,
					var;

		out[c] = (double) n;
		if (n == 0)
			continue;
		mean_offset = moments_array(s, MOMENT_S1)[c] / n;
		var = moments_array(s, MOMENT_S2)[c] / n - mean_offset * mean_offset;
		out[columns + c] = (double) (moments_array(s, MOMENT_SHIFT)[c] + mean_offset);
		out[2 * columns + c] = (double) sqrtl(var > 0 ? var : 0);
	}
	PG_RETURN_DATUM(float8_array(out, 3 * columns));
}
