# Several nodes over loopback: a coordinator whose table is hash
# partitioned over one local partition and two foreign partitions
# (postgres_fdw) on two more clusters, which the test starts and stops.
#   - The statistics aggregates run on each node (the Gram state through
#     postgres_fdw, whose Remote SQL names it; the gradient and Hessian
#     state by a manual fan-out), and the states merged on the coordinator,
#     after the text round trip of the wire, equal the aggregate over a
#     single-node copy.
#   - A model with immediate removal is refused on the tree; a deferred
#     one trains on it and equals single-node training to 1e-9 (sigma 0).
#   - DELETE through the root and on a foreign partition by name reaches
#     the deferred models on the coordinator: the queue holds the rows,
#     the models withhold their weights until unlearn_apply_pending, and
#     then equal the single-node model (sigma 0) or stay certified (sigma 1).
#   - TRUNCATE of a foreign partition is refused.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $coordinator = unlearn_node('coordinator');
my @shards = (unlearn_node('shard1'), unlearn_node('shard2'));
$_->start for ($coordinator, @shards);

for my $shard (@shards)
{
	$shard->safe_psql('postgres', q{
CREATE EXTENSION unlearn;
CREATE TABLE digits_part (id int PRIMARY KEY, five boolean NOT NULL, pixels float8[] NOT NULL);
});
}

$coordinator->safe_psql('postgres', 'CREATE EXTENSION unlearn; CREATE EXTENSION postgres_fdw');
for my $i (1, 2)
{
	my $shard = $shards[ $i - 1 ];
	my ($host, $port) = ($shard->host, $shard->port);
	$coordinator->safe_psql('postgres', qq{
CREATE SERVER shard$i FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$host', port '$port', dbname 'postgres', extensions 'unlearn', async_capable 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER shard$i;
});
}
$coordinator->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE dist (id int NOT NULL, five boolean NOT NULL, pixels float8[] NOT NULL) PARTITION BY HASH (id);
CREATE TABLE dist_p0 PARTITION OF dist FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE FOREIGN TABLE dist_p1 PARTITION OF dist FOR VALUES WITH (MODULUS 3, REMAINDER 1)
	SERVER shard1 OPTIONS (table_name 'digits_part');
CREATE FOREIGN TABLE dist_p2 PARTITION OF dist FOR VALUES WITH (MODULUS 3, REMAINDER 2)
	SERVER shard2 OPTIONS (table_name 'digits_part');
INSERT INTO dist SELECT id, label = 5, pixels FROM digits;
CREATE TABLE single AS SELECT * FROM dist;
ALTER TABLE single ADD PRIMARY KEY (id);
});
my $on_shards = $shards[0]->safe_psql('postgres', 'SELECT count(*) FROM digits_part')
  + $shards[1]->safe_psql('postgres', 'SELECT count(*) FROM digits_part');
is($on_shards + $coordinator->safe_psql('postgres', 'SELECT count(*) FROM dist_p0'), '1797',
	'the rows are spread over the coordinator and the two shards');
cmp_ok($on_shards, '>', 1000, 'most rows live on the shards');

# 1. per-shard states, merged on the coordinator
my $w = "'{" . join(',', map { sprintf('%.6f', 0.01 * sin($_)) } 1 .. 65) . "}'::float8[]";
my $state = "unlearn_gradient_hessian_state(pixels || 1::float8, CASE WHEN five THEN 1 ELSE -1 END, $w, 'logistic')";
my $explain = $coordinator->safe_psql('postgres',
	"EXPLAIN (VERBOSE, COSTS OFF) SELECT unlearn_gram_state(pixels || 1::float8) FROM dist_p1");
like($explain, qr/Remote SQL: SELECT public\.unlearn_gram_state\(/,
	'postgres_fdw ships the Gram state aggregate to the shard');
unlike($explain, qr/^\s*(Partial )?Aggregate/m, 'the coordinator aggregates nothing itself');
my $rel_diff = q{
CREATE FUNCTION pg_temp.rel_diff(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
	SELECT max(abs(x - y)) / greatest(max(abs(y)), 1e-300) FROM unnest(a, b) u(x, y)
$$;};
# the manual fan-out (PL/Proxy's RUN ON ALL, Citus's run_command_on_shards):
# each node computes its state, which travels as text to the coordinator
my @states = map { $_->safe_psql('postgres', "SELECT $state FROM digits_part") } @shards;
push @states, $coordinator->safe_psql('postgres', "SELECT $state FROM dist_p0");
my $values = join(' UNION ALL ', map { "SELECT '$_'::unlearn.stats AS s" } @states);
is( $coordinator->safe_psql('postgres', $rel_diff . qq{
WITH merged AS (SELECT unlearn_stats_values(unlearn_merge(s)) AS v FROM ($values) q),
whole AS (SELECT unlearn_stats_values($state) AS v FROM single)
SELECT (m.v).rows = (w.v).rows
	AND pg_temp.rel_diff((m.v).gradient, (w.v).gradient) < 1e-12
	AND pg_temp.rel_diff((m.v).matrix, (w.v).matrix) < 1e-12
	AND abs((m.v).loss_sum - (w.v).loss_sum) <= 1e-12 * abs((w.v).loss_sum)
FROM merged m, whole w}),
	't', 'gradient and Hessian states of the three nodes, merged after a text round trip, equal the single-node aggregate');
is( $coordinator->safe_psql('postgres', $rel_diff . q{
WITH merged AS (SELECT unlearn_stats_values(unlearn_merge(s)) AS v FROM (
	SELECT unlearn_gram_state(pixels || 1::float8) s FROM dist_p0
	UNION ALL SELECT unlearn_gram_state(pixels || 1::float8) FROM dist_p1
	UNION ALL SELECT unlearn_gram_state(pixels || 1::float8) FROM dist_p2) q),
whole AS (SELECT unlearn_stats_values(unlearn_gram_state(pixels || 1::float8)) AS v FROM single)
SELECT pg_temp.rel_diff((m.v).matrix, (w.v).matrix) < 1e-12 FROM merged m, whole w}),
	't', 'Gram states computed on the shards through postgres_fdw and merged equal the single-node aggregate');

# 2. training on the tree
my ($rc, $out, $err) = $coordinator->psql('postgres',
	q{SELECT model FROM unlearn_train('dist_now', 'dist', 'five', '{pixels}')});
like($err, qr/table "dist" cannot have a model with immediate removal: it has foreign partition "dist_p1"/,
	'immediate removal is refused on a tree with foreign partitions');
$coordinator->safe_psql('postgres', q{
SELECT model FROM unlearn_train('dist_exact', 'dist', 'five', '{pixels}', sigma => 0, options => '{"removal": "deferred"}');
SELECT model FROM unlearn_train('dist_noisy', 'dist', 'five', '{pixels}', sigma => 1, options => '{"removal": "deferred"}');
SELECT model FROM unlearn_train('single_exact', 'single', 'five', '{pixels}', sigma => 0);
});
my $distance = q{
SELECT max(abs(a - b)) / max(abs(b)) < 1e-9
FROM unnest(unlearn_coef('dist_exact'), unlearn_coef('single_exact')) u(a, b)};
is($coordinator->safe_psql('postgres', $distance), 't',
	'the deferred model trained over the shards equals single-node training');
is($coordinator->safe_psql('postgres', q{
SELECT string_agg(c.relname || ':' || t.tgenabled::text, ',' ORDER BY c.relname)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname = 'unlearn_after_row'}),
	'dist:A,dist_p0:A,dist_p1:A,dist_p2:A', 'the row trigger is on the root and every partition, foreign ones too');

# 3. erasure on the shards reaches the coordinator's models
my $erase = q{
DELETE FROM dist WHERE id IN (SELECT id FROM dist_p1 ORDER BY id LIMIT 3);
DELETE FROM dist_p2 WHERE id IN (SELECT id FROM dist_p2 ORDER BY id LIMIT 2);
UPDATE dist SET five = NOT five WHERE id = (SELECT min(id) FROM dist_p2);
};
my $gone = $coordinator->safe_psql('postgres', q{
SELECT string_agg(id::text, ',') FROM (
	(SELECT id FROM dist_p1 ORDER BY id LIMIT 3) UNION ALL
	(SELECT id FROM dist_p2 ORDER BY id LIMIT 2)) g});
my $flipped = $coordinator->safe_psql('postgres',
	q{SELECT min(id) FROM dist_p2 WHERE id NOT IN (SELECT id FROM dist_p2 ORDER BY id LIMIT 2)});
$coordinator->safe_psql('postgres', $erase);
$coordinator->safe_psql('postgres', "DELETE FROM single WHERE id IN ($gone); UPDATE single SET five = NOT five WHERE id = $flipped");
is($shards[0]->safe_psql('postgres', 'SELECT count(*) FROM digits_part')
	  + $shards[1]->safe_psql('postgres', 'SELECT count(*) FROM digits_part'),
	$on_shards - 5, 'the shards lost the rows');
is($coordinator->safe_psql('postgres',
	q{SELECT string_agg(model || ':' || pending, ',' ORDER BY model) FROM unlearn.status WHERE removal = 'deferred'}),
	'dist_exact:7,dist_noisy:7', 'each deferred model queued five removals and the update (one out, one in)');
($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT unlearn_predict('dist_noisy', ARRAY(SELECT 0::float8 FROM generate_series(1, 64)))});
like($err, qr/model "dist_noisy" releases no weights: row changes of its table are queued/,
	'a model with queued changes withholds its weights');
$coordinator->safe_psql('postgres', q{
SELECT unlearn_apply_pending('dist_exact');
SELECT unlearn_apply_pending('dist_noisy');
});
is($coordinator->safe_psql('postgres', q{
SELECT string_agg(model || ':' || pending || ':' || (rows = (SELECT count(*) FROM dist)), ',' ORDER BY model)
FROM unlearn.status WHERE removal = 'deferred'}),
	'dist_exact:0:true,dist_noisy:0:true', 'applied: the queues are empty and the models count the table\'s rows');
is($coordinator->safe_psql('postgres', $distance), 't',
	'after the erasure the deferred model equals the single-node model');
is($coordinator->safe_psql('postgres', q{
SELECT l.operation || ':' || l.rows_removed || ':' || l.rows_added || ':' || l.retrained || ':' || v.certified
FROM unlearn_ledger('dist_noisy') l, unlearn_verify('dist_noisy') v ORDER BY l.id DESC LIMIT 1}),
	'apply:6:1:false:true', 'the noisy model took the certified Newton step and stays certified');

# 4. TRUNCATE of a foreign partition cannot bypass the models
($rc, $out, $err) = $coordinator->psql('postgres', 'TRUNCATE dist_p1');
like($err, qr/cannot truncate table "dist_p1" because unlearn models are trained on it/,
	'TRUNCATE of a foreign partition is refused');

$_->stop for ($coordinator, @shards);
done_testing();
