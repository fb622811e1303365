"""Rebuilds the karate club files of this folder from networkx's own copy of Zachary's data.

    pip install networkx   # 3.6.1 wrote the files committed here
    python data/karate/make_karate.py [OUT_DIR]   # default: this folder

networkx embeds Zachary's weighted adjacency matrix in its source (networkx/generators/social.py,
`karate_club_graph()`, BSD-3-Clause) with each member's club. This script writes:

- karate_networkx.mtx: the 78 undirected edges as Matrix Market `coordinate pattern symmetric`,
  34 x 34, each edge once in the lower triangle (row > column), 1-based, ordered by column then
  row (the weights are not kept: the loader takes the graph's pattern);
- karate_networkx_club.tsv: `node<TAB>club`, 0-based, club "Mr. Hi" or "Officer" (17 each).

Both are derived here from networkx's data; nothing is copied from elsewhere.
"""

import sys
from pathlib import Path

import networkx as nx


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    g = nx.karate_club_graph()
    n = g.number_of_nodes()
    assert sorted(g.nodes) == list(range(n)), "nodes are 0..n-1"
    edges = sorted({(max(u, v), min(u, v)) for u, v in g.edges if u != v}, key=lambda e: (e[1], e[0]))
    lines = [
        "%%MatrixMarket matrix coordinate pattern symmetric",
        f"% Zachary's karate club: networkx {nx.__version__} karate_club_graph(), written by make_karate.py",
        f"{n} {n} {len(edges)}",
    ]
    lines += [f"{u + 1} {v + 1}" for u, v in edges]
    (out / "karate_networkx.mtx").write_text("\n".join(lines) + "\n")
    clubs = ["node\tclub"] + [f"{v}\t{g.nodes[v]['club']}" for v in range(n)]
    (out / "karate_networkx_club.tsv").write_text("\n".join(clubs) + "\n")
    print(f"{n} nodes, {len(edges)} edges -> {out}")


if __name__ == "__main__":
    main()
