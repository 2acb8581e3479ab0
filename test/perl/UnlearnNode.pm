# The TAP tests' two shared pieces: a cluster that preloads unlearn (its
# removal matrices live in shared memory set aside at start-up), and the
# SQL that loads scikit-learn's digits (1,797 rows of 64 pixels) from the
# Debian package into a table digits (id, label, pixels).
package UnlearnNode;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(unlearn_node $DIGITS_SQL);

our $DIGITS_SQL = q{
CREATE TABLE digits (id serial PRIMARY KEY, label int, pixels float8[]);
\copy digits (pixels, label) FROM PROGRAM 'zcat /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz | awk -F, ''{ s = $1; for (i = 2; i < NF; i++) s = s "," $i; print "{" s "}\t" $NF }'''
};

# a new cluster (init options passed on) with unlearn preloaded, not
# started; its maintenance worker is off, so that each test sees only its
# own statements' work (009_worker turns it on)
sub unlearn_node
{
	my ($name, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init(%init);
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'unlearn'");
	$node->append_conf('postgresql.conf', 'unlearn.worker = off');
	return $node;
}

1;
