# The maintenance worker: after a restart it rebuilds the removal matrices
# before any change needs them; when a model's spent budget crosses
# unlearn.worker_reanchor_at it re-anchors the model in its own
# transaction, so no user statement pays that pass; it does not re-anchor a
# model again until the model has spent more; and unlearn.worker = off
# stops it.  Its work is in the ledger.  The model of sections 1 to 5 maps
# its rows with "preprocess": "none": under 'standardize', a DELETE that
# moves a column's statistics a grid step retrains in the user statement,
# which is 13_preprocess's subject, not the worker's.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $node = unlearn_node('worker');
$node->append_conf('postgresql.conf', qq{
unlearn.worker = on
unlearn.worker_naptime = 1
log_min_messages = debug1
});
$node->start;

ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'unlearn launcher'"),
	'the launcher runs');

$node->safe_psql('postgres', 'CREATE EXTENSION unlearn');
$node->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE threes AS SELECT id, (label = 3)::int AS y, pixels FROM digits;
ALTER TABLE threes ADD PRIMARY KEY (id);
SELECT count(*) FROM unlearn_train('threes', 'threes', 'y', '{pixels}', sigma => 1, lambda => 1e-3,
                                   options => '{"preprocess": "none"}');
DELETE FROM threes WHERE id = 1;
});

# the number of log lines matching re, from offset on
sub log_count
{
	my ($re, $offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	my @lines = ($log =~ /$re/g);
	return scalar @lines;
}

# wait for the launcher to finish n more rounds (or report n off turns)
sub wait_rounds
{
	my ($re, $n) = @_;
	my $offset = -s $node->logfile;
	for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
	{
		return 1 if log_count($re, $offset) >= $n;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# 1. warm after a restart
$node->restart;
ok($node->poll_query_until('postgres', 'SELECT resident FROM unlearn.status'),
	'after a restart the worker makes the matrices resident without any change');
is($node->safe_psql('postgres', q{
SELECT string_agg(operation, ',' ORDER BY id) FROM unlearn.ledger}),
	'train,delete,rebuild', 'the ledger records the rebuild');
is($node->safe_psql('postgres', 'SELECT retrains FROM unlearn.models'), '0', 'without retraining');
$node->safe_psql('postgres', 'DELETE FROM threes WHERE id = 2');
is($node->safe_psql('postgres', q{
SELECT reanchored FROM unlearn.ledger ORDER BY id DESC LIMIT 1}), 'f',
	'the first DELETE after the restart does not rebuild');

# 2. re-anchoring once the model is due
my $at = $node->safe_psql('postgres', 'SHOW unlearn.worker_reanchor_at');
is($at, '0.75', 'the threshold is three quarters of the budget');
# worker.c's reanchor_due, from the catalog and the ledger
my $due = qq{
SELECT m.spent - r >= $at * (m.budget - r)
FROM unlearn.models m,
     LATERAL (SELECT coalesce(least((SELECT spent FROM unlearn.ledger l
                                     WHERE l.model = m.model AND (reanchored OR retrained)
                                     ORDER BY id DESC LIMIT 1), m.budget), 0) AS r) x};
# Deleting stops at the due point, or as soon as the worker has taken the
# model in a round of its own (its re-anchoring resets the due point): past
# that, each further re-anchoring leaves the weights further from the
# rows' optimum, until one row's bound alone can exceed what is left.
my $id = 3;
while ($node->safe_psql('postgres', $due) eq 'f')
{
	$node->safe_psql('postgres', "DELETE FROM threes WHERE id = $id");
	$id++;
	last if $id > 1000;
	last if $node->safe_psql('postgres', q{
		SELECT count(*) FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')}) > 0;
}
cmp_ok($id, '<=', 1000, "the model was due after " . ($id - 3) . ' single-row DELETEs');
ok($node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')}),
	'the worker took the model');
my ($op, $reanchored, $retrained, $ratio) = split /\|/, $node->safe_psql('postgres', q{
SELECT l.operation, l.reanchored, l.retrained, l.spent / m.budget
FROM unlearn.ledger l JOIN unlearn.models m USING (model)
WHERE operation IN ('reanchor', 'retrain') ORDER BY l.id LIMIT 1});
if ($op eq 'reanchor')
{
	ok($reanchored eq 't' && $retrained eq 'f', 'a re-anchoring, recorded as one');
	cmp_ok($ratio, '<=', $at / 2, "it left a measured residual of $ratio of the budget, under half the threshold");
}
else
{
	ok($retrained eq 't', 'the re-anchoring freed too little: a retraining');
	cmp_ok($ratio, '<=', 0.05, 'with fresh noise, at most the training target of 1/20 of the budget');
}
is($node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn.ledger WHERE operation = 'delete' AND (reanchored OR retrained)}),
	'0', 'no user statement re-anchored or retrained');
is($node->safe_psql('postgres', 'SELECT certified FROM unlearn_verify(\'threes\')'), 't',
	'the model is certified');

# 3. the wake-up: with rounds an hour apart, only the commit of the
# statement that makes a re-anchoring due brings the worker, twice more
# (one re-anchoring of section 2 may still have been on its way), each
# before any statement has to re-anchor: the due point counts from the
# residual the previous re-anchoring measured.  Once a DELETE has made the
# model due, the test waits for the worker before the next one, so that
# what it checks is that the wake-up comes, not how fast the machine is
# (a quarter of the budget is about ten DELETEs, a few hundred ms).
$node->safe_psql('postgres', q{
ALTER SYSTEM SET unlearn.worker_naptime = '1h';
SELECT pg_reload_conf();
});
my $worker_ops = q{
SELECT count(*) FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')};
my $taken_before = $node->safe_psql('postgres', $worker_ops);
my $taken = $taken_before;
my $from = $id;
while ($taken < $taken_before + 2 && $id <= 1500)
{
	$node->safe_psql('postgres', "DELETE FROM threes WHERE id = $id");
	$id++;
	$node->poll_query_until('postgres', "SELECT ($worker_ops) > $taken OR NOT ($due)")
	  or last;
	$taken = $node->safe_psql('postgres', $worker_ops);
}
is($taken, $taken_before + 2,
	'wake-ups brought the worker twice more in ' . ($id - $from) . ' single-row DELETEs');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn.ledger WHERE operation = 'delete' AND (reanchored OR retrained)}),
	'0', 'still no user statement re-anchored or retrained');
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET unlearn.worker_naptime;
SELECT pg_reload_conf();
});

# 4. the off switch
$node->safe_psql('postgres', 'ALTER SYSTEM SET unlearn.worker = off');
$node->reload;
ok(wait_rounds(qr/unlearn launcher: worker is off/, 1), 'the launcher sees the switch');
my $before = $node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')});
while ($node->safe_psql('postgres', 'SELECT spent < 0.9 * budget FROM unlearn.models') eq 't')
{
	$node->safe_psql('postgres', "DELETE FROM threes WHERE id = $id");
	$id++;
	last if $id > 1500;
}
ok(wait_rounds(qr/unlearn launcher: worker is off/, 3), 'three more turns went by');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')}), $before,
	'with the worker off, nothing re-anchors the model in the background');

# 5. back on: the model is taken again
$node->safe_psql('postgres', 'ALTER SYSTEM SET unlearn.worker = on');
$node->reload;
ok($node->poll_query_until('postgres', qq{
SELECT count(*) > $before FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')}),
	'switched back on, the worker takes the model again');
is($node->safe_psql('postgres', 'SELECT certified FROM unlearn_verify(\'threes\')'), 't',
	'still certified');

# 6. re-anchoring that frees too little.  With the exact bound, one
# statement's spend is the norm of its residual change, so right after one
# DELETE the measured residual is all but the whole spend: re-anchoring
# frees almost nothing.  A retraining model is retrained with fresh noise;
# a suspending one keeps the re-anchoring and is not taken again until it
# spends more.
$node->safe_psql('postgres', q{
ALTER SYSTEM SET unlearn.worker_reanchor_at = 0.05;
ALTER SYSTEM SET unlearn.worker = off;
SELECT pg_reload_conf();
CREATE TABLE fives AS SELECT id, (label = 5)::int AS y, pixels FROM digits;
ALTER TABLE fives ADD PRIMARY KEY (id);
SELECT count(*) FROM unlearn_train('keep', 'fives', 'y', '{pixels}', options => '{"bound": "exact", "on_exhausted": "suspend"}');
SELECT count(*) FROM unlearn_train('renew', 'fives', 'y', '{pixels}', options => '{"bound": "exact"}');
});
my $noise = $node->safe_psql('postgres', q{SELECT md5(noise) FROM unlearn.model_state WHERE model = 'renew'});
# the smallest DELETE (tried and rolled back) that makes both models due
# (worker.c's reanchor_due at 0.05, counted from the residual their
# training measured, which spent starts at) within their budgets
my $k = 5;
for (; $k < 1500; $k = int($k * 1.5))
{
	my $spend = $node->safe_psql('postgres', qq{
BEGIN;
DELETE FROM fives WHERE id <= $k;
SELECT bool_and(m.spent - r >= 0.05 * (m.budget - r)) AND max(m.spent / m.budget) < 1
FROM unlearn.models m,
     LATERAL (SELECT coalesce(least((SELECT spent FROM unlearn.ledger l
                                     WHERE l.model = m.model AND (reanchored OR retrained)
                                     ORDER BY id DESC LIMIT 1), m.budget), 0) AS r) x
WHERE m.model IN ('keep', 'renew');
ROLLBACK;});
	last if $spend eq 't';
}
cmp_ok($k, '<', 1500, "a DELETE of $k rows makes both models due within their budgets");
$node->safe_psql('postgres', qq{
DELETE FROM fives WHERE id <= $k;
ALTER SYSTEM SET unlearn.worker = on;
SELECT pg_reload_conf();});
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 2 FROM unlearn.ledger
WHERE model IN ('keep', 'renew') AND operation IN ('reanchor', 'retrain')}),
	'the worker took both models');
is($node->safe_psql('postgres', q{
SELECT string_agg(model || ':' || operation, ',' ORDER BY model) FROM unlearn.ledger
WHERE model IN ('keep', 'renew') AND operation IN ('reanchor', 'retrain')}),
	'keep:reanchor,renew:retrain', 'it re-anchored the suspending model and retrained the other');
isnt($node->safe_psql('postgres', q{SELECT md5(noise) FROM unlearn.model_state WHERE model = 'renew'}),
	$noise, 'the retraining drew fresh noise');
ok(wait_rounds(qr/unlearn launcher: round over/, 3), 'three more rounds went by');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM unlearn.ledger WHERE model = 'keep' AND operation = 'reanchor'}), '1',
	'the suspending model is not re-anchored again before it spends more');
is($node->safe_psql('postgres', q{
SELECT bool_and(certified) FROM unnest(ARRAY['keep', 'renew']) m, unlearn_verify(m)}), 't',
	'both models are certified');

# 7. a hostile database owner.  It makes transactions read-only by default
# on its database (which every session there, the worker's included,
# inherits)
# and puts an index on its table whose predicate calls its own function,
# which the planning of the worker's read of the rows evaluates.  The
# worker still re-anchors its model, and the function runs as that owner.
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET unlearn.worker_reanchor_at;
SELECT pg_reload_conf();
CREATE ROLE dbo LOGIN;
CREATE DATABASE hostile OWNER dbo;
});
$node->safe_psql('hostile', 'CREATE EXTENSION unlearn');
$node->safe_psql('hostile', q{SET ROLE dbo;} . $DIGITS_SQL . q{
CREATE TABLE sevens AS SELECT id, (label = 7)::int AS y, pixels FROM digits;
ALTER TABLE sevens ADD PRIMARY KEY (id);
CREATE FUNCTION probe(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
		RAISE EXCEPTION 'probe ran as a superuser';
	END IF;
	RETURN true;
END $$;
CREATE INDEX sevens_probe ON sevens (y) WHERE probe(1);
SELECT count(*) FROM unlearn_train('sevens', 'sevens', 'y', '{pixels}', sigma => 1);
ALTER DATABASE hostile SET default_transaction_read_only = on;
});
$node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SET ROLE dbo;
DO $$
DECLARE
	i int := 1;
BEGIN
	WHILE (SELECT spent < 0.8 * budget FROM unlearn.models WHERE model = 'sevens') LOOP
		DELETE FROM sevens WHERE id = i;
		i := i + 1;
	END LOOP;
END $$;
});
# (poll_query_until cannot change the setting first)
my $hostile_taken = 'f';
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	$hostile_taken = $node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SELECT count(*) > 0 FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')});
	last if $hostile_taken eq 't';
	select(undef, undef, undef, 0.1);
}
is($hostile_taken, 't', "the worker took the model in the hostile owner's database");
is($node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SET ROLE dbo;
SELECT certified FROM unlearn_verify('sevens')}), 't', 'and it is certified');

# 8. the same owner makes its predicate sleep whenever the worker plans a
# pass: the worker gives the model unlearn.worker_model_timeout, logs the
# cancellation and goes on with its rounds
$node->safe_psql('postgres', q{
ALTER SYSTEM SET unlearn.worker_model_timeout = 500;
SELECT pg_reload_conf();});
$node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SET ROLE dbo;
CREATE OR REPLACE FUNCTION probe(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	-- the worker's setting, which no session of this test has
	IF pg_catalog.current_setting('lock_timeout') = '1s' THEN
		PERFORM pg_catalog.pg_sleep(60);
	END IF;
	RETURN true;
END $$;
});
my $hostile_taken_before = $node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SELECT count(*) FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')});
my $timeout_offset = -s $node->logfile;
$node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SET ROLE dbo;
DO $$
DECLARE
	i int := (SELECT min(id) FROM sevens);
BEGIN
	WHILE (SELECT spent < 0.8 * budget FROM unlearn.models WHERE model = 'sevens') LOOP
		DELETE FROM sevens WHERE id = i;
		i := i + 1;
	END LOOP;
END $$;
});
my $cancelled = 0;
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	$cancelled = log_count(qr/canceling statement due to statement timeout/, $timeout_offset);
	last if $cancelled > 0;
	select(undef, undef, undef, 0.1);
}
cmp_ok($cancelled, '>', 0, 'the worker cancels its work on the sleeping model');
ok(wait_rounds(qr/unlearn launcher: round over/, 2), 'and goes on with its rounds');
is($node->safe_psql('hostile', q{
SET default_transaction_read_only = off;
SELECT count(*) FROM unlearn.ledger WHERE operation IN ('reanchor', 'retrain')}),
	$hostile_taken_before, 'the cancelled work left nothing in the ledger');

$node->stop;
done_testing();
