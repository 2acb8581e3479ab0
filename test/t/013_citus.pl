# A Citus cluster over loopback: a coordinator and two workers, with Citus
# 13.2.2 built from ../shared/vendor/citus by scripts/build-citus (test/run
# runs it; without the source the test is skipped).
#   - The statistics aggregates run in two phases on a distributed table
#     (worker_partial_agg on each shard, coord_combine_agg on the
#     coordinator) and equal the aggregate over a single-node copy.
#   - unlearn_train refuses a distributed and a reference table before
#     reading a row: their rows live in shards, whose writes do not fire
#     the table's triggers, so no model could follow them.
#   - A trained table cannot be distributed, nor added to Citus's metadata
#     (with citus.enable_unsafe_triggers too), and its model stays in step.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use UnlearnNode;
use Test::More;

my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
if (!-f "$sharedir/extension/citus.control")
{
	if ($ENV{UNLEARN_CITUS_EXPECTED})
	{
		fail('Citus is installed (scripts/build-citus had its source)');
		done_testing();
		exit;
	}
	plan skip_all => 'Citus is not installed: scripts/build-citus builds it from ../shared/vendor/citus';
}

sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,unlearn'");
	$node->append_conf('postgresql.conf', 'unlearn.worker = off');
	$node->append_conf('postgresql.conf', 'max_prepared_transactions = 10');
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION unlearn');
	return $node;
}

my $coordinator = citus_node('coordinator');
my @workers = (citus_node('worker1'), citus_node('worker2'));
$coordinator->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coordinator->host . "', " . $coordinator->port . ')');
$coordinator->safe_psql('postgres',
	"SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for @workers;
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM citus_get_active_worker_nodes()'),
	'2', 'a coordinator and two workers');

$coordinator->safe_psql('postgres', $DIGITS_SQL . q{
CREATE TABLE single AS SELECT id, label = 5 AS five, pixels FROM digits;
CREATE TABLE dist (id int PRIMARY KEY, five boolean NOT NULL, pixels float8[] NOT NULL);
SELECT create_distributed_table('dist', 'id', shard_count => 8);
INSERT INTO dist SELECT * FROM single;
CREATE TABLE ref AS SELECT * FROM single;
SELECT create_reference_table('ref');
SELECT truncate_local_data_after_distributing_table('ref');
});
my $placed = $coordinator->safe_psql('postgres', q{
SELECT string_agg(n.nodeport::text || ':' || n.shards, ',' ORDER BY n.nodeport)
FROM (SELECT nodeport, count(*) AS shards FROM pg_dist_shard_placement p
	  JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 'dist'::regclass
	  GROUP BY nodeport) n});
is($placed, join(',', map { $_->port . ':4' } sort { $a->port <=> $b->port } @workers),
	'the 8 shards of the distributed table are on the two workers');

# 1. the statistics aggregates, in two phases
my $w = "'{" . join(',', map { sprintf('%.6f', 0.01 * sin($_)) } 1 .. 65) . "}'::float8[]";
my $state = "unlearn_gradient_hessian_state(pixels || 1::float8, CASE WHEN five THEN 1 ELSE -1 END, $w, 'logistic')";
my $explain = $coordinator->safe_psql('postgres', "EXPLAIN (VERBOSE, COSTS OFF) SELECT $state FROM dist");
like($explain, qr/worker_partial_agg/, 'each shard computes a partial state');
like($explain, qr/coord_combine_agg/, 'the coordinator combines the states');
my $rel_diff = q{
CREATE FUNCTION pg_temp.rel_diff(a float8[], b float8[]) RETURNS float8 LANGUAGE sql AS $$
	SELECT max(abs(x - y)) / greatest(max(abs(y)), 1e-300) FROM unnest(a, b) u(x, y)
$$;};
is( $coordinator->safe_psql('postgres', $rel_diff . qq{
WITH d AS (SELECT unlearn_stats_values($state) AS v FROM dist),
s AS (SELECT unlearn_stats_values($state) AS v FROM single)
SELECT (d.v).rows = (s.v).rows
	AND pg_temp.rel_diff((d.v).gradient, (s.v).gradient) < 1e-12
	AND pg_temp.rel_diff((d.v).matrix, (s.v).matrix) < 1e-12
	AND abs((d.v).loss_sum - (s.v).loss_sum) <= 1e-12 * abs((s.v).loss_sum)
FROM d, s}),
	't', 'the gradient and Hessian state over the shards equals the single-node aggregate');
is( $coordinator->safe_psql('postgres', $rel_diff . q{
SELECT pg_temp.rel_diff(
	(SELECT (unlearn_stats_values(unlearn_gram_state(pixels || 1::float8))).matrix FROM dist),
	(SELECT (unlearn_stats_values(unlearn_gram_state(pixels || 1::float8))).matrix FROM single)) < 1e-12}),
	't', 'so does the Gram state');

# 2. no model on a table whose rows live in shards
for my $table ('dist', 'ref')
{
	my ($rc, $out, $err) = $coordinator->psql('postgres',
		"SET citus.enable_unsafe_triggers = on; SELECT unlearn_train('m_$table', '$table', 'five', '{pixels}')");
	like($err, qr/cannot train a model on table "$table", which Citus manages/,
		"unlearn_train refuses the " . ($table eq 'dist' ? 'distributed' : 'reference') . ' table');
}
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM unlearn.models'), '0', 'and no model is left');

# 3. a trained table stays local
$coordinator->safe_psql('postgres', q{
CREATE TABLE kept AS SELECT * FROM single;
SELECT count(*) FROM unlearn_train('kept', 'kept', 'five', '{pixels}', sigma => 1);
});
my ($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT create_distributed_table('kept', 'id')});
like($err, qr/because it has triggers/, 'Citus refuses to distribute the trained table');
($rc, $out, $err) = $coordinator->psql('postgres',
	q{SET citus.enable_unsafe_triggers = on; SELECT create_distributed_table('kept', 'id')});
isnt($rc, 0, 'with citus.enable_unsafe_triggers too');
($rc, $out, $err) = $coordinator->psql('postgres', q{SELECT citus_add_local_table_to_metadata('kept')});
isnt($rc, 0, 'and it is not added to the metadata');
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'kept'::regclass}),
	'0', 'the table is still local');
$coordinator->safe_psql('postgres', 'DELETE FROM kept WHERE id % 9 = 0');
is($coordinator->safe_psql('postgres', q{
SELECT m.rows = (SELECT count(*) FROM kept) AND v.certified
FROM unlearn.models m, unlearn_verify(m.model) v WHERE m.model = 'kept'}),
	't', 'its model follows a DELETE, certified');

$_->stop for ($coordinator, @workers);
done_testing();
