EXTENSION = unlearn
EXTVERSION = 0.15.0

MODULE_big = unlearn
OBJS = src/unlearn.o src/linalg.o src/loss.o src/budget.o src/features.o \
	src/train.o src/catalog.o src/removal.o src/trigger.o src/predict.o \
	src/verify.o src/state_store.o src/cholesky_modify.o \
	src/privilege.o src/rows.o src/runtime.o src/worker.o \
	src/column_map.o src/metrics.o src/evaluate.o src/grants.o \
	src/feature_expr.o src/plan.o src/score.o src/aggregates.o \
	src/pass_rows.o src/column_moments.o src/newton.o src/train_pass.o \
	src/deferred.o src/progress.o

DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
# earlier releases as shipped, and the scripts that update them
DATA = sql/$(EXTENSION)--0.1.0.sql sql/$(EXTENSION)--0.1.0--0.2.0.sql \
	sql/$(EXTENSION)--0.2.0.sql sql/$(EXTENSION)--0.2.0--0.3.0.sql \
	sql/$(EXTENSION)--0.3.0.sql sql/$(EXTENSION)--0.3.0--0.4.0.sql \
	sql/$(EXTENSION)--0.4.0.sql sql/$(EXTENSION)--0.4.0--0.5.0.sql \
	sql/$(EXTENSION)--0.5.0.sql sql/$(EXTENSION)--0.5.0--0.6.0.sql \
	sql/$(EXTENSION)--0.6.0.sql sql/$(EXTENSION)--0.6.0--0.7.0.sql \
	sql/$(EXTENSION)--0.7.0.sql sql/$(EXTENSION)--0.7.0--0.8.0.sql \
	sql/$(EXTENSION)--0.8.0.sql sql/$(EXTENSION)--0.8.0--0.9.0.sql \
	sql/$(EXTENSION)--0.9.0.sql sql/$(EXTENSION)--0.9.0--0.10.0.sql \
	sql/$(EXTENSION)--0.10.0.sql sql/$(EXTENSION)--0.10.0--0.11.0.sql \
	sql/$(EXTENSION)--0.11.0.sql sql/$(EXTENSION)--0.11.0--0.12.0.sql \
	sql/$(EXTENSION)--0.12.0.sql sql/$(EXTENSION)--0.12.0--0.13.0.sql \
	sql/$(EXTENSION)--0.13.0.sql sql/$(EXTENSION)--0.13.0--0.14.0.sql \
	sql/$(EXTENSION)--0.14.0.sql sql/$(EXTENSION)--0.14.0--0.15.0.sql

TESTS = $(sort $(wildcard test/sql/*.sql))
REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=test --load-extension=$(EXTENSION)

ISOLATION = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --load-extension=$(EXTENSION)

PG_CPPFLAGS = -I/usr/include/x86_64-linux-gnu/openblas-pthread -DUNLEARN_VERSION='"$(EXTVERSION)"'
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
SHLIB_LINK = -lopenblas -llapacke
# the per-row loops of the row map and the finiteness check, vectorised as
# PostgreSQL vectorises its page checksums (element-wise, no reordered sums)
src/column_map.o src/features.o: CFLAGS += $(CFLAGS_VECTORIZE)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# every object depends on the shared header (PGXS tracks no dependencies)
$(OBJS): src/unlearn.h

sql/$(EXTENSION)--$(EXTVERSION).sql: sql/$(EXTENSION).sql
	cp $< $@

# TAP tests run against the installed server binaries, like pgvector's
# prove_installcheck: PGXS TAP needs a server built with --enable-tap-tests.
.PHONY: prove_installcheck
prove_installcheck:
	rm -rf $(CURDIR)/tmp_check
	cd $(srcdir) && TESTDIR='$(CURDIR)' PATH="$(bindir):$$PATH" PGPORT='6$(DEF_PGPORT)' \
		top_builddir='$(CURDIR)/$(top_builddir)' \
		PG_REGRESS='$(top_builddir)/src/test/regress/pg_regress' \
		$(PROVE) -I $(pgxsdir)/src/test/perl -I test/perl $(PROVE_FLAGS) $(or $(PROVE_TESTS),test/t/*.pl)
