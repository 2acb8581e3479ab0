EXTENSION = unlearn
EXTVERSION = 0.22.0

MODULE_big = unlearn
# layers as folders; calls go down only (scripts/check_layers.py):
#   api -> exec -> store -> mechanism -> math
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/math/*.c src/mechanism/*.c \
	src/store/*.c src/exec/*.c src/api/*.c)))

DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
# what a user installs: the current script and the update scripts
DATA = $(sort $(wildcard sql/$(EXTENSION)--*--*.sql))
# the install scripts of earlier releases, as shipped, for the upgrade test
# (test/t/007_upgrade.pl); test/run installs them with install-test-scripts
TEST_SCRIPTS = $(sort $(wildcard test/upgrade/$(EXTENSION)--*.sql))

TESTS = $(sort $(wildcard test/sql/*.sql))
REGRESS = $(patsubst test/sql/%.sql,%,$(TESTS))
REGRESS_OPTS = --inputdir=test --load-extension=$(EXTENSION)

ISOLATION = $(patsubst test/specs/%.spec,%,$(sort $(wildcard test/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test --load-extension=$(EXTENSION)

PG_CPPFLAGS = -I$(srcdir)/src -I/usr/include/x86_64-linux-gnu/openblas-pthread -DUNLEARN_VERSION='"$(EXTVERSION)"'
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
SHLIB_LINK = -lopenblas -llapacke
# the per-row loops of the row map and the finiteness check, vectorised as
# PostgreSQL vectorises its page checksums (element-wise, no reordered sums)
src/math/column_map.o src/exec/features.o: CFLAGS += $(CFLAGS_VECTORIZE)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# every object depends on the headers and on this file, whose EXTVERSION
# the worker compares with the catalog (PGXS tracks no dependencies)
$(OBJS): $(wildcard src/*.h src/*/*.h) Makefile

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

.PHONY: install-test-scripts
install-test-scripts:
	$(INSTALL_DATA) $(addprefix $(srcdir)/,$(TEST_SCRIPTS)) '$(DESTDIR)$(datadir)/extension/'
