/*-------------------------------------------------------------------------
 *
 * audit.c
 *	  unlearn_audit: a membership-inference audit of a model with canaries
 *	  (seed 004's INJECT protocol), and its read-outs (seed 001, 2.4.3).
 *
 * Canaries are rows made from the table's own rows: a row with its label
 * flipped ('mislabeled'), or each feature from another random row and a
 * random label ('random').  Each is kept out of the table with
 * probability 1/2 ("never seen"); the others enter it through an
 * ordinary INSERT, and half of those leave it again through an ordinary
 * DELETE ("deleted"), so the model's triggers see them as any write.  The
 * first deletions are one statement each, to watch what two consecutive
 * releases reveal.  Then everything the writes did is rolled back: the
 * audit runs in a subtransaction that never commits.
 *
 * The attacker scores each canary by the log likelihood ratio of its
 * margin phi = y w'x between "member" and "non-member":
 *
 *	'loo'		knows every other row: its non-member mean is phi at the
 *				noiseless optimum w* of the other rows, its spread the
 *				model's noise alone, s^2 = sigma^2 ||H^-1 x||^2, and a
 *				member shifts phi by sigmoid(-m) x'H^-1 x (mechanisms.md 4)
 *	'analytic'	'lira' in closed form: it knows the table's rows but not
 *				which other canaries the model holds (see
 *				closed_form_scores)
 *	'lira'		online LiRA: shadow models trained as the model is (the
 *				same solver, fresh noise) on the table's rows and a random
 *				quarter of the canaries (the share the model holds), one
 *				Gaussian per canary in and out, one pooled variance
 *
 * False positives are measured on the never-seen canaries; a TPR is
 * reported only at an FPR that leaves at least one of them above the
 * threshold (1,000 never-seen canaries for 0.1%), and is NULL otherwise.  The
 * "retrained" population is the deleted canaries under a model trained
 * again on the rows that remain, with fresh noise: what forgetting should
 * match.  Cost: one read of the table, the writes, one noiseless fit (and
 * one per shadow), then O(p^2) per canary.
 *
 *-------------------------------------------------------------------------
 */
#include "api/api.h"

#include <float.h>
#include <math.h>

#include <cblas.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(unlearn_audit);
PG_FUNCTION_INFO_V1(unlearn_audit_statistics);
PG_FUNCTION_INFO_V1(unlearn_audit_canaries);

#define AUDIT_MIN_CANARIES 20
#define AUDIT_MAX_CANARIES 1000000
#define AUDIT_MAX_SHADOWS 1024
#define AUDIT_RELEASE_PAIRS 20	/* deletions watched one statement each */
#define AUDIT_COLUMNS 17
#define AUDIT_RELEARN_PASSES 50

/*
 * The share of the canaries the model holds when it is scored (the
 * present ones: half are kept out, half of the rest deleted), and so the
 * share each shadow model holds.
 */
#define SHADOW_HOLDS 0.25
/* from this many shadows each canary has its own variances, in and out */
#define LIRA_OWN_VARIANCE 64

static const double audit_fpr[2] = {0.001, 0.01};

typedef enum CanaryGroup
{
	CANARY_NEVER,
	CANARY_PRESENT,
	CANARY_DELETED,
	CANARY_FORGET				/* a row of forget => (not a canary) */
} CanaryGroup;

typedef enum AuditAttack
{
	ATTACK_LOO,
	ATTACK_ANALYTIC,
	ATTACK_LIRA
} AuditAttack;

typedef struct Canaries
{
	int			count;
	int			d;				/* raw features per canary */
	int			p;
	double	   *raw;			/* count * d */
	char	  **labels;			/* a class of the model */
	double	   *y;				/* +-1 */
	CanaryGroup *group;
	double	   *x;				/* count * p: raw, then mapped as the model maps
								 * rows (map_design) */
} Canaries;

/* what the audit's writes left, read before they are rolled back */
typedef struct AuditWrites
{
	UnlearnModel *model;		/* after the writes */
	int			ndeleted;
	int		   *deleted;		/* the deleted canaries, in the order deleted */
	int			pairs;			/* watched deletions that were Newton steps */
	int		   *pair_step;		/* which deletion (index into deleted) */
	UnlearnModel **pair_before; /* the model before it: w, row map, Lambda */
	double	   *pair_after;		/* pairs * p: w after it */
	UnlearnModel *before_deletions; /* after the inserts, before any DELETE */
	int			nforget;		/* rows of forget => deleted, inside the model */
	double	   *forget_raw;		/* nforget * dims */
	char	  **forget_labels;
	UnlearnModel *forget_before;	/* the model before forget's DELETE, if that
									 * was a Newton step (else NULL) */
} AuditWrites;

/* one population's figures against the never-seen canaries */
typedef struct PopulationFigures
{
	int64		rows;
	double		auc;
	double		tpr[2],
				low[2],
				high[2];
	bool		resolved[2];	/* the negatives allow a false positive at that FPR */
	double		fpr_high[2];	/* 97.5% upper bound on the threshold's true FPR */
} PopulationFigures;

static double
gaussian(pg_prng_state *rng)
{
	double		u1 = 1.0 - pg_prng_double(rng);
	double		u2 = pg_prng_double(rng);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/*
 * The TPR of the sorted positive scores at each audit FPR, with its
 * Clopper-Pearson interval, and the AUC, against the sorted negatives.
 */
static void
population_figures(const double *pos, int64 npos, const double *neg, int64 nneg,
				   PopulationFigures *out)
{
	int			a;

	out->rows = npos;
	out->auc = membership_auc(pos, npos, neg, nneg);
	for (a = 0; a < 2; a++)
	{
		int64		hits = count_above(pos, npos, threshold_at_fpr(neg, nneg, audit_fpr[a]));

		out->tpr[a] = npos > 0 ? (double) hits / npos : NAN;
		clopper_pearson(hits, npos, &out->low[a], &out->high[a]);
		out->resolved[a] = floor(audit_fpr[a] * (double) nneg) >= 1.0;
		out->fpr_high[a] = threshold_fpr_bound(nneg, audit_fpr[a]);
	}
}

/* the canaries' rows: copies of the table's (raw) rows, see above */
static void
make_canaries(UnlearnModel *m, const DesignMatrix *rows, bool random_rows,
			  pg_prng_state *rng, Canaries *c)
{
	int			i,
				j;

	c->d = m->def.dims;
	c->p = m->def.p;
	c->raw = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * (Size) c->count * c->d);
	c->labels = palloc(sizeof(char *) * c->count);
	c->y = palloc(sizeof(double) * c->count);
	c->group = palloc(sizeof(CanaryGroup) * c->count);
	c->x = MemoryContextAllocExtended(CurrentMemoryContext, sizeof(double) * (Size) c->count * c->p,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (i = 0; i < c->count; i++)
	{
		double		u;

		if (random_rows)
		{
			for (j = 0; j < c->d; j++)
				c->raw[(Size) i * c->d + j] =
					rows->x[pg_prng_uint64_range(rng, 0, rows->n - 1) * rows->p + j];
			c->y[i] = pg_prng_bool(rng) ? 1.0 : -1.0;
		}
		else
		{
			uint64		r = pg_prng_uint64_range(rng, 0, rows->n - 1);

			memcpy(c->raw + (Size) i * c->d, rows->x + r * rows->p, sizeof(double) * c->d);
			c->y[i] = -rows->y[r];
		}
		memcpy(c->x + (Size) i * c->p, c->raw + (Size) i * c->d, sizeof(double) * c->d);
		c->labels[i] = m->released.classes[c->y[i] > 0 ? 1 : 0];
		u = pg_prng_double(rng);
		c->group[i] = u < 0.5 ? CANARY_NEVER : u < 0.75 ? CANARY_PRESENT : CANARY_DELETED;
	}
}

static UnlearnModel *
load_released(const char *name)
{
	UnlearnModel *m;
	ExtensionContext ctx;

	enter_extension_context(&ctx);
	m = catalog_load_model(name, false, false, false);
	/* fisher: the scale of its releases' noise, which the attackers know */
	if (MODEL_HIDES_WEIGHTS(m) && m->released.status == MODEL_READY)
		load_release_state(m);
	leave_extension_context(&ctx);
	return m;
}

/*
 * The model as the audit began: the same owner, table, loss, columns and
 * dimensions, a binary classifier.  Anything the audit's writes run (a
 * table owner's trigger, a function of forget) may retrain or replace
 * the model; the audit then stops rather than mix two models' arrays.
 */
static bool
same_definition(const UnlearnModel *a, const UnlearnModel *b)
{
	int			j;

	if (a->def.owner != b->def.owner || a->def.source != b->def.source ||
		a->def.loss != b->def.loss || a->def.dims != b->def.dims || a->def.p != b->def.p ||
		a->def.intercept != b->def.intercept || a->def.feature_array != b->def.feature_array ||
		a->def.nfeatures != b->def.nfeatures ||
		(a->released.status == MODEL_READY && a->released.nclasses != 1) ||
		(b->released.status == MODEL_READY && b->released.nclasses != 1))
		return false;
	for (j = 0; j <= a->def.nfeatures; j++)
		if (a->def.column_types[j] != b->def.column_types[j] ||
			(j < a->def.nfeatures && strcmp(a->def.features[j], b->def.features[j]) != 0))
			return false;
	return true;
}

/* the model as the audit began, or an error */
static UnlearnModel *
load_same_model(const UnlearnModel *m)
{
	UnlearnModel *now = load_released(m->def.name);

	if (!same_definition(m, now))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" was redefined during its audit", m->def.name),
				 errdetail("Nothing the audit wrote remains."),
				 errhint("Run the audit again.")));
	return now;
}

/* the same row map: no retrain or grid step moved the coordinates */
static bool
same_row_map(const UnlearnModel *a, const UnlearnModel *b)
{
	int			n = map_columns(a);

	if (a->def.p != b->def.p || a->def.scale != b->def.scale ||
		(a->def.centre == NULL) != (b->def.centre == NULL))
		return false;
	return a->def.centre == NULL ||
		(memcmp(a->def.centre, b->def.centre, sizeof(double) * n) == 0 &&
		 memcmp(a->def.spread, b->def.spread, sizeof(double) * n) == 0);
}

/* a deferred model applies its queue, as its owner would */
static void
apply_queue(UnlearnModel *m)
{
	Datum		name = CStringGetTextDatum(m->def.name);
	Oid			type = TEXTOID;

	if (!m->def.deferred)
		return;
	if (SPI_execute_with_args("SELECT unlearn._apply_pending($1)", 1, &type, &name,
							  NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not apply the queue of model \"%s\"", m->def.name);
}

/* the canaries of group g: their count, labels and raw rows */
static int
group_rows(const Canaries *c, CanaryGroup g, int **index, char ***labels, double **raw)
{
	int			n = 0,
				i;

	*index = palloc(sizeof(int) * c->count);
	*labels = palloc(sizeof(char *) * c->count);
	*raw = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * (Size) c->count * c->d);
	for (i = 0; i < c->count; i++)
		if (c->group[i] == g)
		{
			(*index)[n] = i;
			(*labels)[n] = c->labels[i];
			memcpy(*raw + (Size) n * c->d, c->raw + (Size) i * c->d, sizeof(double) * c->d);
			n++;
		}
	return n;
}

/*
 * The audit's writes, inside the subtransaction: the canaries to delete
 * and those to keep enter the table; the first deletions run one
 * statement each, watched, then the rest in one.  out receives the model
 * as they left it.
 */
static void
audit_writes(UnlearnModel *m, Canaries *c, const char *forget, AuditWrites *out)
{
	int		   *deleted,
			   *present;
	char	  **labels;
	double	   *raw;
	int			ndeleted,
				npresent,
				t;
	Oid		   *oids,
			   *present_oids;
	ItemPointerData *tids,
			   *present_tids;
	UnlearnModel *before;
	int			p = m->def.p;

	ndeleted = group_rows(c, CANARY_DELETED, &deleted, &labels, &raw);
	oids = palloc(sizeof(Oid) * Max(ndeleted, 1));
	tids = palloc(sizeof(ItemPointerData) * Max(ndeleted, 1));
	canaries_insert(m, ndeleted, labels, raw, oids, tids);
	apply_queue(m);
	npresent = group_rows(c, CANARY_PRESENT, &present, &labels, &raw);
	present_oids = palloc(sizeof(Oid) * Max(npresent, 1));
	present_tids = palloc(sizeof(ItemPointerData) * Max(npresent, 1));
	canaries_insert(m, npresent, labels, raw, present_oids, present_tids);
	apply_queue(m);
	progress_phase("deleting canaries", 0, 1, -1);
	out->before_deletions = load_same_model(m);

	out->ndeleted = ndeleted;
	out->deleted = deleted;
	out->pairs = 0;
	out->pair_step = palloc(sizeof(int) * AUDIT_RELEASE_PAIRS);
	out->pair_before = palloc(sizeof(UnlearnModel *) * AUDIT_RELEASE_PAIRS);
	out->pair_after = palloc(sizeof(double) * AUDIT_RELEASE_PAIRS * p);
	before = out->before_deletions;
	for (t = 0; t < Min(AUDIT_RELEASE_PAIRS, ndeleted); t++)
	{
		UnlearnModel *after;

		canaries_delete(m, 1, &oids[t], &tids[t]);
		apply_queue(m);
		after = load_same_model(m);
		/* a retrain releases fresh noise, a new map new coordinates */
		if (before->released.status == MODEL_READY && after->released.status == MODEL_READY &&
			after->released.retrains == before->released.retrains && same_row_map(before, after))
		{
			out->pair_step[out->pairs] = t;
			out->pair_before[out->pairs] = before;
			memcpy(out->pair_after + (Size) out->pairs * p, after->released.coef, sizeof(double) * p);
			out->pairs++;
		}
		before = after;
	}
	if (ndeleted > t)
		canaries_delete(m, ndeleted - t, oids + t, tids + t);
	apply_queue(m);
	out->nforget = 0;
	out->forget_before = NULL;
	before = load_same_model(m);
	if (forget != NULL)
	{
		UnlearnModel *after;

		out->nforget = canaries_forget(m, forget, npresent, present_oids, present_tids,
									   &out->forget_raw, &out->forget_labels);
		apply_queue(m);
		after = load_same_model(m);
		if (before->released.status == MODEL_READY && after->released.status == MODEL_READY &&
			after->released.retrains == before->released.retrains && same_row_map(before, after))
			out->forget_before = before;
		before = after;
	}
	out->model = before;
}

/* run audit_writes in a subtransaction that is always rolled back */
static void
audit_writes_rolled_back(UnlearnModel *m, Canaries *c, const char *forget, AuditWrites *out)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		/* what the writes tell (retrains, budget) is undone with them */
		(void) set_config_option("client_min_messages", "warning", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		audit_writes(m, c, forget, out);
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
		ReThrowError(edata);
	}
	PG_END_TRY();
}

/* the rows of base and, after them, the canaries of group g */
static DesignMatrix
rows_and_group(const DesignMatrix *base, const Canaries *c, CanaryGroup g)
{
	DesignMatrix dm = *base;
	int			i;

	dm.x = MemoryContextAllocHuge(CurrentMemoryContext,
								  sizeof(double) * (Size) (base->n + c->count) * c->p);
	dm.y = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * (Size) (base->n + c->count));
	memcpy(dm.x, base->x, sizeof(double) * (Size) base->n * c->p);
	memcpy(dm.y, base->y, sizeof(double) * (Size) base->n);
	for (i = 0; i < c->count; i++)
		if (c->group[i] == g)
		{
			memcpy(dm.x + dm.n * c->p, c->x + (Size) i * c->p, sizeof(double) * c->p);
			dm.y[dm.n++] = c->y[i];
		}
	return dm;
}

/*
 * fit a binary model of m on dm with noise b (NULL: none), from start
 * (NULL: w = 0); the optimum does not depend on the start
 */
static void
fit_weights(UnlearnModel *m, const DesignMatrix *dm, const double *b, const double *start,
			double *w, double *factor)
{
	double	   *anchor = palloc(sizeof(double) * m->def.p);
	double		weight_sum;

	if (start != NULL)
		memcpy(w, start, sizeof(double) * m->def.p);
	else
		memset(w, 0, sizeof(double) * m->def.p);
	fit_class(m, dm, 0, b, w, anchor, factor, &weight_sum, false);
	pfree(anchor);
}

/* standard normal numbers from the audit's generator, for Noisy-GD's steps */
static void
audit_normal(void *arg, double *z, int n)
{
	int			i;

	CHECK_FOR_INTERRUPTS();
	for (i = 0; i < n; i++)
		z[i] = gaussian((pg_prng_state *) arg);
}

/*
 * A release of m on dm with fresh noise from rng, as m's mechanism makes
 * one: a Newton model's fit with noise b ~ N(0, sigma^2 I) by chord steps
 * from w0 with the factor of the Hessian at w0 (a full fit if they
 * stall); a Noisy-GD model's training from the stationary start.
 */
static void
fresh_release(UnlearnModel *m, const DesignMatrix *dm, pg_prng_state *rng, const double *w0,
			  const double *factor, double *b, double *w, double *scratch)
{
	int			j;

	if (m->def.mechanism == MECHANISM_NOISY_GD)
	{
		NoisyGdRows rows;

		noisy_gd_rows_init(&rows, dm->x, dm->y, dm->n, m->def.p);
		noisy_gd_release(m, dm->n, noisy_gd_rows_gradient, &rows, m->def.training_steps, true,
						 audit_normal, rng, w);
		noisy_gd_rows_free(&rows);
		return;
	}
	for (j = 0; j < m->def.p; j++)
		b[j] = m->def.sigma * gaussian(rng);
	memcpy(w, w0, sizeof(double) * m->def.p);
	if (!fit_class_chord(m, dm, 0, b, factor, w))
		fit_weights(m, dm, b, w0, w, scratch);
	/* fisher publishes w + z, z ~ N(0, c H^-1), with its last release's c */
	if (m->def.mechanism == MECHANISM_FISHER && m->state.release_scale > 0)
	{
		double		sd = sqrt(m->state.release_scale);

		for (j = 0; j < m->def.p; j++)
			scratch[j] = gaussian(rng);
		packed_lower_transpose_solve(factor, m->def.p, scratch);
		for (j = 0; j < m->def.p; j++)
			w[j] += sd * scratch[j];
	}
}

static double
margin(const double *w, const double *x, double y, int p)
{
	return y * vec_dot(w, x, p);
}

/*
 * The closed-form attackers: lam[i] for each canary under w, and lam_r
 * under w_r, from the noiseless optimum w0 of the rows the model holds
 * and the factor of its Hessian H.  v = H^-1 x; holding a canary moves
 * its margin by shift = sigmoid(-m) x'v.
 *
 *	'loo' knows every other row: the non-member mean is the margin at w0
 *	less the canary's own shift if the model holds it, and the spread is
 *	the noise's, sigma^2 ||v||^2.
 *
 *	'analytic' is 'lira' in closed form: it knows the table's rows but not
 *	which other canaries the model holds, each with probability q
 *	(SHADOW_HOLDS).  Its reference is the optimum with every canary held
 *	with weight q, one Newton step from w0: w_q = w0 - H^-1 g_q,
 *	g_q = sum_j (q - held_j) grad l_j(w0).  A canary's margin is then
 *	m_q - q shift out and m_q + (1 - q) shift in, with the noise's spread
 *	plus that of the other canaries, v' G v, G = sum_j q (1 - q) l'_j^2
 *	x_j x_j'.
 */
static void
closed_form_scores(UnlearnModel *m, const Canaries *c, const double *w0, const double *factor,
				   bool analytic, const double *w, const double *w_r, double *lam, double *lam_r)
{
	int			p = c->p;
	double		q = SHADOW_HOLDS;
	double	   *gram = NULL;
	double	   *w_q = NULL;
	double	   *v = palloc(sizeof(double) * p);
	double	   *gv = palloc(sizeof(double) * p);
	int64		i;

	if (analytic)
	{
		double	   *g_q = palloc0(sizeof(double) * p);

		gram = MemoryContextAllocExtended(CurrentMemoryContext, sizeof(double) * PACKED_SIZE(p),
										  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (i = 0; i < c->count; i++)
		{
			const double *x = c->x + i * p;
			double		d1 = loss_d1(m->def.loss, vec_dot(w0, x, p), c->y[i]);
			double		held = c->group[i] == CANARY_PRESENT ? 1.0 : 0.0;

			CHECK_FOR_INTERRUPTS();

			cblas_daxpy(p, (q - held) * d1, x, 1, g_q, 1);
			cblas_dspr(CblasColMajor, CblasLower, p, q * (1.0 - q) * d1 * d1, x, 1, gram);
		}
		chol_solve_packed(factor, p, g_q);
		w_q = palloc(sizeof(double) * p);
		for (i = 0; i < p; i++)
			w_q[i] = w0[i] - g_q[i];
	}
	for (i = 0; i < c->count; i++)
	{
		const double *x = c->x + i * p;
		double		y = c->y[i];
		double		phi0 = margin(w0, x, y, p);
		double		shift,
					spread2,
					mu_out;

		CHECK_FOR_INTERRUPTS();
		memcpy(v, x, sizeof(double) * p);
		chol_solve_packed(factor, p, v);
		shift = logistic_sigmoid(-phi0) * vec_dot(x, v, p);
		spread2 = mechanism_for(m)->margin_variance(m, x, v);
		if (analytic)
		{
			double		d1 = loss_d1(m->def.loss, vec_dot(w0, x, p), y);
			double		own = vec_dot(v, x, p);

			/* the other canaries' spread: G less the canary's own term */
			spread2 += Max(packed_quadratic(gram, p, v, gv) - q * (1.0 - q) * d1 * d1 * own * own, 0.0);
			mu_out = margin(w_q, x, y, p) - q * shift;
		}
		else
			mu_out = phi0 - (c->group[i] == CANARY_PRESENT ? shift : 0.0);
		lam[i] = membership_log_ratio(margin(w, x, y, p), mu_out, shift, sqrt(spread2));
		lam_r[i] = membership_log_ratio(margin(w_r, x, y, p), mu_out, shift, sqrt(spread2));
	}
}

/*
 * Online LiRA: shadows shadow models, each fitted like the model (its
 * Lambda, fresh noise) on the table's rows and a random quarter of the
 * canaries, so that a shadow holds what the model holds but for which
 * canaries; per canary one Gaussian of its margin in the shadows that
 * held it and one in the others, with one pooled variance below 64
 * shadows and each its own from 64.
 *
 * A shadow's margin of canary i moves with which other canaries it
 * holds far more than with canary i itself, so its mean in and out is
 * estimated with a control variate: the first-order move of the margin
 * caused by the other canaries the shadow holds beyond their expected
 * share q,
 *
 *	c_i(s) = -y_i v_i' sum_{j != i} (held_j(s) - q) l'_j x_j,  v_i = H^-1 x_i,
 *
 * at the noiseless optimum w0 of the rows the model holds, with H its
 * Hessian.  c_i has mean 0 over the shadows' random draws whether or not
 * a shadow holds i, so phi - c_i estimates the same means with the
 * spread of the other canaries removed (the noise, and what the first
 * order misses, remain).  The variances are the raw margins' about
 * those means: the target's other canaries are as unknown to the
 * attacker as a shadow's.  Each shadow is fitted to the model's training
 * tolerance by chord steps from w0 with H's factor (fit_class_chord):
 * O(n p) a step instead of a training's O(n p^2) Hessian.
 */
static void
lira_scores(UnlearnModel *m, const Canaries *c, const DesignMatrix *rows, int shadows,
			pg_prng_state *rng, const double *w0, const double *factor, const double *w,
			const double *w_r, double *lam, double *lam_r)
{
	int			p = c->p;
	int			s,
				i;
	double		q = SHADOW_HOLDS;
	double	   *margins = MemoryContextAllocHuge(CurrentMemoryContext,
												 sizeof(double) * (Size) shadows * c->count);
	bool	   *held = MemoryContextAllocHuge(CurrentMemoryContext,
										   sizeof(bool) * (Size) shadows * c->count);
	double	   *sum_in = palloc0(sizeof(double) * c->count);
	double	   *sum_out = palloc0(sizeof(double) * c->count);
	int		   *n_in = palloc0(sizeof(int) * c->count);
	int		   *n_out = palloc0(sizeof(int) * c->count);
	double	   *d1 = palloc(sizeof(double) * c->count);
	double	   *leverage = palloc(sizeof(double) * c->count);
	double	   *v = palloc(sizeof(double) * p);
	double	   *u = palloc(sizeof(double) * p);
	double	   *b = palloc(sizeof(double) * p);
	double	   *ws = palloc(sizeof(double) * p);
	double	   *scratch = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * PACKED_SIZE(p));
	double		squares = 0.0,
				pooled;
	int64		freedom = 0;
	DesignMatrix shadow;

	for (i = 0; i < c->count; i++)
	{
		const double *x = c->x + (Size) i * p;

		CHECK_FOR_INTERRUPTS();
		d1[i] = loss_d1(m->def.loss, vec_dot(w0, x, p), c->y[i]);
		memcpy(v, x, sizeof(double) * p);
		chol_solve_packed(factor, p, v);
		leverage[i] = vec_dot(x, v, p);
	}

	shadow.p = p;
	shadow.cls = NULL;
	shadow.skipped = 0;
	shadow.x = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(double) * (Size) (rows->n + c->count) * p);
	shadow.y = MemoryContextAllocHuge(CurrentMemoryContext,
									  sizeof(double) * (Size) (rows->n + c->count));
	for (s = 0; s < shadows; s++)
	{
		bool	   *hs = held + (Size) s * c->count;

		CHECK_FOR_INTERRUPTS();
		progress_phase("training shadow models", s + 1, 1, -1);
		shadow.n = rows->n;
		memcpy(shadow.x, rows->x, sizeof(double) * (Size) rows->n * p);
		memcpy(shadow.y, rows->y, sizeof(double) * (Size) rows->n);
		memset(u, 0, sizeof(double) * p);
		for (i = 0; i < c->count; i++)
		{
			hs[i] = pg_prng_double(rng) < q;
			if (hs[i])
			{
				memcpy(shadow.x + shadow.n * p, c->x + (Size) i * p, sizeof(double) * p);
				shadow.y[shadow.n++] = c->y[i];
			}
			cblas_daxpy(p, ((hs[i] ? 1.0 : 0.0) - q) * d1[i], c->x + (Size) i * p, 1, u, 1);
		}
		chol_solve_packed(factor, p, u);
		fresh_release(m, &shadow, rng, w0, factor, b, ws, scratch);
		for (i = 0; i < c->count; i++)
		{
			const double *x = c->x + (Size) i * p;
			double		phi = margin(ws, x, c->y[i], p);
			double		move = -c->y[i] * (vec_dot(x, u, p) -
										  ((hs[i] ? 1.0 : 0.0) - q) * d1[i] * leverage[i]);

			margins[(Size) s * c->count + i] = phi;
			if (hs[i])
			{
				sum_in[i] += phi - move;
				n_in[i]++;
			}
			else
			{
				sum_out[i] += phi - move;
				n_out[i]++;
			}
		}
	}
	for (i = 0; i < c->count; i++)
	{
		if (n_in[i] > 0)
			sum_in[i] /= n_in[i];
		if (n_out[i] > 0)
			sum_out[i] /= n_out[i];
		for (s = 0; s < shadows; s++)
		{
			double		phi = margins[(Size) s * c->count + i];
			double		mean = held[(Size) s * c->count + i] ? sum_in[i] : sum_out[i];

			squares += (phi - mean) * (phi - mean);
		}
		freedom += (n_in[i] > 0) + (n_out[i] > 0);
	}
	freedom = (int64) shadows * c->count - freedom;
	pooled = freedom > 0 ? sqrt(squares / freedom) : 0.0;
	for (i = 0; i < c->count; i++)
	{
		const double *x = c->x + (Size) i * p;
		double		sd_in = pooled,
					sd_out = pooled;

		if (n_in[i] == 0 || n_out[i] == 0)
		{
			lam[i] = lam_r[i] = 0.0;
			continue;
		}
		if (shadows >= LIRA_OWN_VARIANCE && n_in[i] > 1 && n_out[i] > 1)
		{
			double		in2 = 0.0,
						out2 = 0.0;

			for (s = 0; s < shadows; s++)
			{
				double		phi = margins[(Size) s * c->count + i];

				if (held[(Size) s * c->count + i])
					in2 += (phi - sum_in[i]) * (phi - sum_in[i]);
				else
					out2 += (phi - sum_out[i]) * (phi - sum_out[i]);
			}
			sd_in = sqrt(in2 / (n_in[i] - 1));
			sd_out = sqrt(out2 / (n_out[i] - 1));
		}
		lam[i] = gaussian_log_ratio(margin(w, x, c->y[i], p), sum_in[i], sd_in, sum_out[i], sd_out);
		lam_r[i] = gaussian_log_ratio(margin(w_r, x, c->y[i], p), sum_in[i], sd_in, sum_out[i], sd_out);
	}
}

/* the scores of the canaries of group g, sorted */
static double *
group_scores(const Canaries *c, CanaryGroup g, const double *lam, int64 *n)
{
	double	   *out = palloc(sizeof(double) * c->count);
	int			i;

	*n = 0;
	for (i = 0; i < c->count; i++)
		if (c->group[i] == g)
			out[(*n)++] = lam[i];
	sort_scores(out, *n);
	return out;
}

/* error, mean confidence and mean entropy (nats) of w on the canaries of g */
static void
read_outs(const Canaries *c, CanaryGroup g, const double *w, double *error,
		  double *confidence, double *entropy)
{
	int64		n = 0,
				wrong = 0;
	double		conf = 0.0,
				ent = 0.0;
	int			i;

	for (i = 0; i < c->count; i++)
	{
		double		z,
					q;

		if (c->group[i] != g)
			continue;
		z = vec_dot(w, c->x + (Size) i * c->p, c->p);
		q = logistic_sigmoid(z);
		wrong += (z >= 0) != (c->y[i] > 0);
		conf += Max(q, 1.0 - q);
		if (q > 0.0 && q < 1.0)
			ent -= q * log(q) + (1.0 - q) * log1p(-q);
		n++;
	}
	*error = n > 0 ? (double) wrong / n : NAN;
	*confidence = n > 0 ? conf / n : NAN;
	*entropy = n > 0 ? ent / n : NAN;
}

/*
 * The two-release attacker's vector for one step: dw = w_before - w_after
 * and u = H dw, H the Hessian at w_before of the rows that remain, built
 * up from u = Lambda dw (release_step_begin) by one term per row
 * (release_step_add): u += l''(w.z) (z . dw) z.
 */
static void
release_step_begin(const UnlearnModel *before, const double *w_after, int p, double *dw,
				   double *u)
{
	int			i;

	for (i = 0; i < p; i++)
	{
		dw[i] = before->released.coef[i] - w_after[i];
		u[i] = before->def.reg * dw[i];
	}
}

static void
release_step_add(const UnlearnModel *before, const double *z, const double *dw, int p,
				 double *u)
{
	double		q = logistic_sigmoid(vec_dot(before->released.coef, z, p));

	cblas_daxpy(p, q * (1.0 - q) * vec_dot(z, dw, p), z, 1, u, 1);
}

/* |cos| of u and z, or -1 when either is zero */
static double
abs_cosine(const double *u, const double *z, int p)
{
	double		norm_u = vec_norm(u, p),
				norm_z = vec_norm(z, p);

	if (norm_u == 0.0 || norm_z == 0.0)
		return -1.0;
	return fabs(vec_dot(u, z, p)) / (norm_u * norm_z);
}

/*
 * The two-release attack of seed 002 on each watched deletion: an
 * observer of w before and after who reads the rows that remain forms
 * u = H (w_before - w_after), H their Hessian at w_before, and finds it
 * along the deleted row (a Newton step is H^-1 times its gradient).  The
 * mean |cos| of u with the deleted row goes to *deleted, and with a
 * canary that stayed to *kept, over the deletions that moved w (NaN
 * without one).  u needs
 * no H: it is sum_r l''(w.z_r) (z_r . dw) z_r + Lambda dw, one O(n p)
 * pass per deletion.
 */
static void
release_cosines(const Canaries *c, const AuditWrites *writes, const double *raw_rows,
				int64 nrows, int stride, pg_prng_state *rng, double *deleted, double *kept)
{
	int			p = c->p;
	double	   *z = palloc(sizeof(double) * p);
	double	   *u = palloc(sizeof(double) * p);
	double	   *dw = palloc(sizeof(double) * p);
	int		   *present = palloc(sizeof(int) * c->count);
	bool	   *gone = palloc(sizeof(bool) * c->count);
	int			npresent = 0,
				pair,
				i;
	int			counted[2] = {0, 0};

	*deleted = *kept = 0.0;
	for (i = 0; i < c->count; i++)
		if (c->group[i] == CANARY_PRESENT)
			present[npresent++] = i;
	for (pair = 0; pair < writes->pairs; pair++)
	{
		UnlearnModel *before = writes->pair_before[pair];
		int			step = writes->pair_step[pair];
		RowMap		map;
		int64		r;
		int			side;

		CHECK_FOR_INTERRUPTS();
		model_row_map(before, &map);
		/* the rows after this deletion: the table's, the present canaries, later deletions */
		for (i = 0; i < c->count; i++)
			gone[i] = c->group[i] == CANARY_NEVER;
		for (i = 0; i <= step; i++)
			gone[writes->deleted[i]] = true;
		release_step_begin(before, writes->pair_after + (Size) pair * p, p, dw, u);
		for (r = 0; r < nrows + c->count; r++)
		{
			if (r >= nrows && gone[r - nrows])
				continue;
			memset(z, 0, sizeof(double) * p);
			if (r < nrows)
				memcpy(z, raw_rows + r * stride, sizeof(double) * c->d);
			else
				memcpy(z, c->raw + (r - nrows) * c->d, sizeof(double) * c->d);
			map_row(&map, z);
			release_step_add(before, z, dw, p, u);
		}
		for (side = 0; side < 2; side++)
		{
			int			target;
			double		cosine;

			if (side == 1 && npresent == 0)
				break;
			target = side == 0 ? writes->deleted[step] :
				present[pg_prng_uint64_range(rng, 0, npresent - 1)];
			memset(z, 0, sizeof(double) * p);
			memcpy(z, c->raw + (Size) target * c->d, sizeof(double) * c->d);
			map_row(&map, z);
			cosine = abs_cosine(u, z, p);
			if (cosine >= 0.0)
			{
				*(side == 0 ? deleted : kept) += cosine;
				counted[side]++;
			}
		}
	}
	/* a deletion that left w as it was (Noisy-GD within its room) shows nothing */
	*deleted = counted[0] > 0 ? *deleted / counted[0] : NAN;
	*kept = counted[1] > 0 ? *kept / counted[1] : NAN;
}

/* a row of forget => to find in the table's rows: its features and label */
typedef struct RowKey
{
	uint32		hash;
	double		y;
	const double *x;			/* dims features */
} RowKey;

static uint32
row_hash(const double *x, int d, double y)
{
	return hash_bytes((const unsigned char *) x, sizeof(double) * d) ^ (y > 0 ? 0x9e3779b9 : 0);
}

static int
compare_row_keys(const void *a, const void *b, void *arg)
{
	const RowKey *ka = a,
			   *kb = b;
	int			d = *(const int *) arg;

	if (ka->hash != kb->hash)
		return ka->hash < kb->hash ? -1 : 1;
	if (ka->y != kb->y)
		return ka->y < kb->y ? -1 : 1;
	return memcmp(ka->x, kb->x, sizeof(double) * d);
}

/*
 * The rows forget => deleted become a population of their own: appended
 * to the canaries (group CANARY_FORGET, labels that are a class only), and
 * taken out of rows, the table as read before the audit, one equal row
 * (features and label) each.
 */
static void
add_forget_rows(UnlearnModel *m, Canaries *c, const AuditWrites *writes, DesignMatrix *rows)
{
	int			total = c->count + writes->nforget;
	int64		r,
				kept = 0;
	int			i,
				f,
				first,
				nkeys;
	RowKey	   *keys;
	int		   *next;

	c->raw = repalloc_huge(c->raw, sizeof(double) * (Size) total * c->d);
	c->labels = repalloc(c->labels, sizeof(char *) * total);
	c->y = repalloc(c->y, sizeof(double) * total);
	c->group = repalloc(c->group, sizeof(CanaryGroup) * total);
	c->x = repalloc_huge(c->x, sizeof(double) * (Size) total * c->p);
	for (f = 0; f < writes->nforget; f++)
	{
		int			k = class_position(m->released.classes, m->released.nlabels,
									   writes->forget_labels[f]);

		if (k < 0)
			continue;
		i = c->count++;
		memcpy(c->raw + (Size) i * c->d, writes->forget_raw + (Size) f * c->d, sizeof(double) * c->d);
		memset(c->x + (Size) i * c->p, 0, sizeof(double) * c->p);
		memcpy(c->x + (Size) i * c->p, c->raw + (Size) i * c->d, sizeof(double) * c->d);
		c->labels[i] = writes->forget_labels[f];
		c->y[i] = k == 1 ? 1.0 : -1.0;
		c->group[i] = CANARY_FORGET;
	}
	/*
	 * forget's rows sorted by hash, label and features: equal rows form a
	 * run, and next[run] is the first of the run not yet found, so each
	 * table row costs one binary search
	 */
	first = total - writes->nforget;
	nkeys = c->count - first;
	keys = palloc(sizeof(RowKey) * Max(nkeys, 1));
	next = palloc(sizeof(int) * Max(nkeys, 1));
	for (i = 0; i < nkeys; i++)
	{
		keys[i].x = c->raw + (Size) (first + i) * c->d;
		keys[i].y = c->y[first + i];
		keys[i].hash = row_hash(keys[i].x, c->d, keys[i].y);
	}
	qsort_arg(keys, nkeys, sizeof(RowKey), compare_row_keys, &c->d);
	for (i = 0; i < nkeys; i++)
		next[i] = i;
	for (r = 0; r < rows->n; r++)
	{
		RowKey		probe;
		int			lo = 0,
					hi = nkeys;

		if (r % 4096 == 0)
			CHECK_FOR_INTERRUPTS();
		probe.x = rows->x + r * rows->p;
		probe.y = rows->y[r];
		probe.hash = row_hash(probe.x, c->d, probe.y);
		while (lo < hi)
		{
			int			mid = (lo + hi) / 2;

			if (compare_row_keys(&keys[mid], &probe, &c->d) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nkeys && compare_row_keys(&keys[lo], &probe, &c->d) == 0 &&
			next[lo] < nkeys && compare_row_keys(&keys[next[lo]], &probe, &c->d) == 0)
		{
			next[lo]++;
			continue;
		}
		if (kept != r)
		{
			memmove(rows->x + kept * rows->p, probe.x, sizeof(double) * rows->p);
			rows->y[kept] = rows->y[r];
		}
		kept++;
	}
	rows->n = kept;
}

/*
 * The two-release statistic of forget's one DELETE: the mean |cos| of
 * u = H (w_before - w_after) with each row it deleted, H at w_before over
 * the rows the model holds (held, mapped by the model after, whose map is
 * the one before when the DELETE was a Newton step).  NaN otherwise.
 */
static double
forget_cosine(const Canaries *c, const AuditWrites *writes, const DesignMatrix *held)
{
	UnlearnModel *before = writes->forget_before;
	int			p = c->p;
	double	   *u,
			   *dw;
	double		total = 0.0;
	int64		r;
	int			i,
				n = 0;

	if (before == NULL)
		return NAN;
	u = palloc(sizeof(double) * p);
	dw = palloc(sizeof(double) * p);
	release_step_begin(before, writes->model->released.coef, p, dw, u);
	for (r = 0; r < held->n; r++)
		release_step_add(before, held->x + r * p, dw, p, u);
	for (i = 0; i < c->count; i++)
	{
		double		cosine;

		if (c->group[i] != CANARY_FORGET)
			continue;
		cosine = abs_cosine(u, c->x + (Size) i * p, p);
		if (cosine < 0.0)
			continue;
		total += cosine;
		n++;
	}
	return n > 0 ? total / n : NAN;
}

/* the mean loss of weights w on the canaries of group g */
static double
group_loss(UnlearnModel *m, const Canaries *c, CanaryGroup g, const double *w)
{
	double		total = 0.0;
	int			n = 0,
				i;

	for (i = 0; i < c->count; i++)
		if (c->group[i] == g)
		{
			total += loss_value(m->def.loss, vec_dot(w, c->x + (Size) i * c->p, c->p), c->y[i]);
			n++;
		}
	return n > 0 ? total / n : NAN;
}

/*
 * Relearn time (seed 001, 2.4.3): Newton passes, from w, over the rows the
 * model holds and the deleted canaries again, until the deleted canaries'
 * mean loss is back at its level before they were deleted (target).  One
 * pass is one gradient and Hessian over the rows.  -1 if it is not back
 * within AUDIT_RELEARN_PASSES.
 */
static int
relearn_passes(UnlearnModel *m, const Canaries *c, const DesignMatrix *again, const double *w,
			   double target)
{
	int			p = c->p;
	double	   *v = palloc(sizeof(double) * p);
	double	   *g = palloc(sizeof(double) * p);
	double	   *factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * PACKED_SIZE(p));
	int			pass,
				j;

	memcpy(v, w, sizeof(double) * p);
	for (pass = 0; pass <= AUDIT_RELEARN_PASSES; pass++)
	{
		double		weight_sum,
					magnitude;

		CHECK_FOR_INTERRUPTS();
		if (group_loss(m, c, CANARY_DELETED, v) <= target)
			return pass;
		if (pass == AUDIT_RELEARN_PASSES)
			break;
		design_gradient(m, again, 0, v, NULL, g, &magnitude);
		if (!design_hessian_factor(m, again, 0, v, factor, &weight_sum))
			break;
		chol_solve_packed(factor, p, g);
		for (j = 0; j < p; j++)
			v[j] -= g[j];
		/* converged short of the target: it will not get there */
		if (vec_norm(g, p) <= 1e-12 * Max(vec_norm(v, p), 1.0))
			break;
	}
	return -1;
}

static void
put_population(ReturnSetInfo *rsinfo, const char *name, bool removed, const PopulationFigures *f,
			   UnlearnModel *m, double error, double confidence, double entropy,
			   int relearn, double cosine)
{
	Datum		values[AUDIT_COLUMNS];
	bool		nulls[AUDIT_COLUMNS] = {0};
	double		evidence = 0.0;
	int			a;

	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum((int32) f->rows);
	values[2] = Float8GetDatum(f->auc);
	nulls[2] = isnan(f->auc);
	for (a = 0; a < 2; a++)
	{
		values[3 + 3 * a] = Float8GetDatum(f->tpr[a]);
		values[4 + 3 * a] = Float8GetDatum(f->low[a]);
		values[5 + 3 * a] = Float8GetDatum(f->high[a]);
		nulls[3 + 3 * a] = nulls[4 + 3 * a] = nulls[5 + 3 * a] = f->rows == 0 || !f->resolved[a];
		/*
		 * ln((TPR - delta) / FPR) from the TPR interval's lower end and the
		 * upper end of the threshold's true FPR
		 */
		if (f->rows > 0 && f->resolved[a] && f->low[a] > m->def.delta)
			evidence = Max(evidence, log((f->low[a] - m->def.delta) / f->fpr_high[a]));
	}
	values[9] = Float8GetDatum(evidence);
	/* the certificate speaks of removed rows only */
	values[10] = Float8GetDatum(removed ? audit_tpr_ceiling(m, audit_fpr[0]) : NAN);
	values[11] = Float8GetDatum(removed ? audit_tpr_ceiling(m, audit_fpr[1]) : NAN);
	values[12] = Float8GetDatum(error);
	values[13] = Float8GetDatum(confidence);
	values[14] = Float8GetDatum(entropy);
	values[16] = Float8GetDatum(cosine);
	for (a = 10; a < AUDIT_COLUMNS; a++)
		nulls[a] = a != 15 && isnan(DatumGetFloat8(values[a]));
	/* relearn passes: for the deleted canaries, and under the retrain */
	values[15] = Int32GetDatum(relearn);
	nulls[15] = relearn < 0;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static int
choice(const char *what, const char *value, const char *const *choices, int n, const char *hint)
{
	int			i;

	for (i = 0; i < n; i++)
		if (strcmp(value, choices[i]) == 0)
			return i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown %s \"%s\"", what, value),
			 errhint("%s", hint)));
	return -1;
}

/*
 * unlearn_audit(model, canaries, shadows, attack, canary_kind, seed):
 * one row per population, see the file header and sql/unlearn.sql.
 */
static Datum
audit_run(FunctionCallInfo fcinfo, bool per_canary)
{
	static const char *const attacks[] = {"loo", "analytic", "lira"};
	static const char *const kinds[] = {"mislabeled", "random"};
	static const char *const argnames[] = {"model", "canaries", "shadows", "attack", NULL, "canary_kind"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	UnlearnModel *m;
	UnlearnModel *after;
	DesignMatrix rows;
	DesignMatrix held;
	DesignMatrix relearn = {0};
	Canaries	c;
	AuditWrites writes;
	AuditAttack attack;
	pg_prng_state rng;
	double	   *w0,
			   *w_r,
			   *b_r,
			   *factor,
			   *scratch,
			   *lam,
			   *lam_r;
	double	   *neg,
			   *neg_r,
			   *pos,
			   *raw_rows;
	int64		nneg,
				nneg_r,
				npos;
	int			shadows,
				i,
				j,
				reports;
	int64		nraw;
	bool		random_rows;
	char	   *forget;
	PopulationFigures figures;
	double		error,
				confidence,
				entropy,
				cosine_deleted,
				cosine_kept,
				relearn_target;
	ExtensionContext ctx;

	for (i = 0; i < lengthof(argnames); i++)
		if (argnames[i] != NULL && PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" of unlearn_audit must not be null", argnames[i])));
	c.count = PG_GETARG_INT32(1);
	shadows = PG_GETARG_INT32(2);
	attack = (AuditAttack) choice("attack", text_to_cstring(PG_GETARG_TEXT_PP(3)), attacks,
								  lengthof(attacks), "The attacks are 'lira', 'analytic' and 'loo'.");
	forget = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	random_rows = choice("canary_kind", text_to_cstring(PG_GETARG_TEXT_PP(5)), kinds,
						 lengthof(kinds), "The canary kinds are 'mislabeled' and 'random'.") == 1;
	if (c.count < AUDIT_MIN_CANARIES || c.count > AUDIT_MAX_CANARIES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("canaries must be between %d and %d", AUDIT_MIN_CANARIES, AUDIT_MAX_CANARIES),
				 errhint("About half of them never enter the table and measure the false positives: a TPR at 0.1%% FPR needs some thousands.")));
	if (attack == ATTACK_LIRA && (shadows < 2 || shadows > AUDIT_MAX_SHADOWS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shadows must be between 2 and %d", AUDIT_MAX_SHADOWS),
				 errhint("Each shadow model costs one training; 16 is the usual choice.")));
	if (PG_ARGISNULL(6))
	{
		if (!pg_prng_strong_seed(&rng))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("could not seed the audit's random numbers")));
	}
	else
		pg_prng_seed(&rng, (uint64) PG_GETARG_INT64(6));

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	enter_extension_context(&ctx);
	m = load_owned_model(PG_GETARG_TEXT_PP(0), ctx.caller);
	if (m->def.loss != LOSS_LOGISTIC || m->released.nclasses != 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unlearn_audit audits binary logistic models, and model \"%s\" is %s",
						m->def.name, m->def.loss == LOSS_SQUARED ? "a regression model" : "one-vs-rest"),
				 errhint("Audit a model with two classes.")));
	for (j = 0; j < m->def.nfeatures; j++)
		if (feature_is_expression(m, j))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("unlearn_audit cannot insert canaries for model \"%s\", whose features are expressions",
							m->def.name),
					 errhint("Audit a model whose features are columns of its table.")));
	if (m->def.filter != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("unlearn_audit cannot insert canaries for model \"%s\", which has a row filter",
						m->def.name),
				 errdetail("A canary holds only the label and the features, so the filter could leave it out."),
				 errhint("Audit a model trained without filter => on a table of its rows.")));
	if (pg_class_aclcheck(m->def.source, ctx.caller, ACL_INSERT) != ACLCHECK_OK ||
		pg_class_aclcheck(m->def.source, ctx.caller, ACL_DELETE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("unlearn_audit needs INSERT and DELETE on table %s",
						relation_qualified_name(m->def.source)),
				 errdetail("Its canaries enter and leave the table as the caller's own writes, which are rolled back."),
				 errhint("Ask the table's owner for INSERT and DELETE, or audit as a role that has them.")));
	/* the canaries copy rows: the caller, and the model's owner, must read them */
	check_may_read_rows(m, m->def.source, ctx.caller, "audit a model", "The audit",
						"audit the model");
	if (!model_owner_may_read(m))
		check_may_read_rows(m, m->def.source, m->def.owner, "audit a model", "The audit",
							"audit the model");
	load_design(m, relation_qualified_name(m->def.source), &rows);
	leave_extension_context(&ctx);
	if (rows.n < 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s has no rows of model \"%s\" to make canaries from",
						relation_qualified_name(m->def.source), m->def.name),
				 errhint("Audit a model whose table has rows.")));

	reports = progress_begin("audit", m->def.name, m->def.owner, m->def.source);
	progress_phase("inserting canaries", 0, 1, -1);
	make_canaries(m, &rows, random_rows, &rng, &c);
	audit_writes_rolled_back(m, &c, forget, &writes);
	after = writes.model;
	if (after->released.status != MODEL_READY || after->def.p != m->def.p)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" released no weights after the audit's canaries: its state became \"%s\"",
						m->def.name, model_status_name(after->released.status)),
				 errdetail("Nothing the audit wrote remains."),
				 errhint("Audit with fewer canaries, or with a larger budget (sigma).")));

	/* the table's rows as the watched deletions saw them: forget came after */
	raw_rows = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * (Size) rows.n * rows.p);
	memcpy(raw_rows, rows.x, sizeof(double) * (Size) rows.n * rows.p);
	nraw = rows.n;
	if (forget != NULL)
		add_forget_rows(after, &c, &writes, &rows);

	/* the rows the model holds after the writes: the table's and the present canaries */
	progress_phase("scoring canaries", 0, 1, -1);
	map_design(after, &rows, false);
	{
		DesignMatrix canary_rows = {0};

		canary_rows.n = c.count;
		canary_rows.p = c.p;
		canary_rows.x = c.x;
		map_design(after, &canary_rows, false);
	}
	held = rows_and_group(&rows, &c, CANARY_PRESENT);

	/* the noiseless optimum and its Hessian, and a retrain with fresh noise */
	w0 = palloc(sizeof(double) * c.p);
	w_r = palloc(sizeof(double) * c.p);
	b_r = palloc(sizeof(double) * c.p);
	factor = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * PACKED_SIZE(c.p));
	scratch = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(double) * PACKED_SIZE(c.p));
	fit_weights(after, &held, NULL, NULL, w0, factor);
	fresh_release(after, &held, &rng, w0, factor, b_r, w_r, scratch);

	lam = palloc(sizeof(double) * c.count);
	lam_r = palloc(sizeof(double) * c.count);
	if (attack == ATTACK_LIRA)
		lira_scores(after, &c, &rows, shadows, &rng, w0, factor, after->released.coef, w_r,
					lam, lam_r);
	else
		closed_form_scores(after, &c, w0, factor, attack == ATTACK_ANALYTIC,
						   after->released.coef, w_r, lam, lam_r);

	if (per_canary)
	{
		static const char *const names[] = {"never seen", "present", "deleted", "forget"};

		for (i = 0; i < c.count; i++)
		{
			Datum		values[4];
			bool		nulls[4] = {0};

			values[0] = CStringGetTextDatum(names[c.group[i]]);
			values[1] = Float8GetDatum(lam[i]);
			values[2] = Float8GetDatum(lam_r[i]);
			values[3] = Float8GetDatum(margin(after->released.coef, c.x + (Size) i * c.p, c.y[i], c.p));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		progress_end(reports);
		SPI_finish();
		return (Datum) 0;
	}

	neg = group_scores(&c, CANARY_NEVER, lam, &nneg);
	neg_r = group_scores(&c, CANARY_NEVER, lam_r, &nneg_r);

	pos = group_scores(&c, CANARY_PRESENT, lam, &npos);
	population_figures(pos, npos, neg, nneg, &figures);
	read_outs(&c, CANARY_PRESENT, after->released.coef, &error, &confidence, &entropy);
	release_cosines(&c, &writes, raw_rows, nraw, rows.p, &rng, &cosine_deleted, &cosine_kept);
	put_population(rsinfo, "present", false, &figures, after, error, confidence, entropy,
				   -1, cosine_kept);

	pos = group_scores(&c, CANARY_DELETED, lam, &npos);
	population_figures(pos, npos, neg, nneg, &figures);
	read_outs(&c, CANARY_DELETED, after->released.coef, &error, &confidence, &entropy);
	progress_phase("relearning", 0, 1, -1);
	relearn_target = writes.before_deletions->released.status == MODEL_READY &&
		same_row_map(writes.before_deletions, after) ?
		group_loss(after, &c, CANARY_DELETED, writes.before_deletions->released.coef) : NAN;
	if (!isnan(relearn_target))
		relearn = rows_and_group(&held, &c, CANARY_DELETED);
	put_population(rsinfo, "deleted", true, &figures, after, error, confidence, entropy,
				   isnan(relearn_target) ? -1 :
				   relearn_passes(after, &c, &relearn, after->released.coef, relearn_target),
				   cosine_deleted);

	population_figures(neg, nneg, neg, nneg, &figures);
	figures.auc = NAN;
	read_outs(&c, CANARY_NEVER, after->released.coef, &error, &confidence, &entropy);
	put_population(rsinfo, "never seen", false, &figures, after, error, confidence, entropy, -1, NAN);

	pos = group_scores(&c, CANARY_DELETED, lam_r, &npos);
	population_figures(pos, npos, neg_r, nneg_r, &figures);
	read_outs(&c, CANARY_DELETED, w_r, &error, &confidence, &entropy);
	put_population(rsinfo, "retrained", true, &figures, after, error, confidence, entropy,
				   isnan(relearn_target) ? -1 : relearn_passes(after, &c, &relearn, w_r, relearn_target),
				   NAN);

	if (forget != NULL)
	{
		pos = group_scores(&c, CANARY_FORGET, lam, &npos);
		population_figures(pos, npos, neg, nneg, &figures);
		/* table rows against mislabeled canaries: only the tail compares */
		figures.auc = NAN;
		read_outs(&c, CANARY_FORGET, after->released.coef, &error, &confidence, &entropy);
		put_population(rsinfo, "forget", true, &figures, after, error, confidence, entropy,
					   -1, forget_cosine(&c, &writes, &held));
	}

	progress_end(reports);
	free_design(&rows);
	SPI_finish();
	return (Datum) 0;
}

Datum
unlearn_audit(PG_FUNCTION_ARGS)
{
	return audit_run(fcinfo, false);
}

/*
 * unlearn._audit_canaries(...): the same audit, one row per canary: its
 * population, the attack's score under the model and under the retrain,
 * and its margin y w'x (the global-threshold attack's score); for the
 * benchmark's ROC curves.
 */
Datum
unlearn_audit_canaries(PG_FUNCTION_ARGS)
{
	return audit_run(fcinfo, true);
}

/* the float8 elements of a one-dimensional array without nulls */
static double *
score_array(ArrayType *arr, const char *what, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	double	   *out;
	int			i;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	deconstruct_array(arr, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, &nulls, n);
	out = palloc(sizeof(double) * Max(*n, 1));
	for (i = 0; i < *n; i++)
	{
		if (nulls[i] || isnan(DatumGetFloat8(elems[i])))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain a null or NaN", what)));
		out[i] = DatumGetFloat8(elems[i]);
	}
	return out;
}

/*
 * unlearn._audit_statistics(members, non_members): the AUC and the TPR at
 * FPR 0.1% and 1% with their Clopper-Pearson intervals that the audit
 * reports for scores (NULL at an FPR the non-members cannot resolve), for
 * tests against an independent computation.
 */
Datum
unlearn_audit_statistics(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[7];
	bool		nulls[7] = {0};
	PopulationFigures f;
	double	   *pos,
			   *neg;
	int			npos,
				nneg,
				a;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	pos = score_array(PG_GETARG_ARRAYTYPE_P(0), "members", &npos);
	neg = score_array(PG_GETARG_ARRAYTYPE_P(1), "non_members", &nneg);
	sort_scores(pos, npos);
	sort_scores(neg, nneg);
	population_figures(pos, npos, neg, nneg, &f);
	values[0] = Float8GetDatum(f.auc);
	nulls[0] = isnan(f.auc);
	for (a = 0; a < 2; a++)
	{
		values[1 + 3 * a] = Float8GetDatum(f.tpr[a]);
		values[2 + 3 * a] = Float8GetDatum(f.low[a]);
		values[3 + 3 * a] = Float8GetDatum(f.high[a]);
		nulls[1 + 3 * a] = nulls[2 + 3 * a] = nulls[3 + 3 * a] = npos == 0 || !f.resolved[a];
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
