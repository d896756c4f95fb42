/* score_heap.h — the binary min-heap both eviction schedulers pick their victims from
 * (sched_remat.c's candidates, sched_rc.c's residents): entries by (score, node), each carrying
 * the version of its node's score it was filed under, so a scheduler can tell a stale entry from
 * the latest. The array and its growth stay the scheduler's; these only order it. */
#ifndef MG_SCORE_HEAP_H
#define MG_SCORE_HEAP_H

typedef struct mg_score_ent {
    double key;
    int node, ver;
} mg_score_ent;

static inline int mg_score_less(const mg_score_ent *a, const mg_score_ent *b)
{
    return a->key < b->key || (a->key == b->key && a->node < b->node);
}

/* Adds e to h[0..*n) (room for one more is the caller's). */
static inline void mg_score_push(mg_score_ent *h, int *n, mg_score_ent e)
{
    int i = (*n)++;
    while (i > 0 && mg_score_less(&e, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

/* Takes the least entry out of h[0..*n) (*n > 0). The last entry fills its place as in the
 * usual sift-down (it goes to the first place on the path of lesser children whose lesser child
 * is no less than it), but found bottom up: the hole goes down that path to a leaf, one
 * comparison a level, and the entry comes up from there while its parent is no less than it,
 * usually not at all (it was a leaf). Along the path the entries never decrease, so it stops
 * where the sift-down would have: the same heap, entry for entry, in about half the comparisons. */
static inline mg_score_ent mg_score_pop(mg_score_ent *h, int *n)
{
    mg_score_ent top = h[0], e = h[--*n];
    int i = 0, m = *n;
    if (m == 0) return top;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && mg_score_less(&h[c + 1], &h[c])) c++;
        h[i] = h[c];
        i = c;
    }
    while (i > 0 && !mg_score_less(&h[(i - 1) / 2], &e)) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
    return top;
}

/* Orders h[0..n) as a heap (Floyd's: each parent sifted down, the last first). */
static inline void mg_score_heapify(mg_score_ent *h, int n)
{
    for (int i = n / 2 - 1; i >= 0; i--) {
        mg_score_ent e = h[i];
        int j = i;
        for (;;) {
            int c = 2 * j + 1;
            if (c >= n) break;
            if (c + 1 < n && mg_score_less(&h[c + 1], &h[c])) c++;
            if (!mg_score_less(&h[c], &e)) break;
            h[j] = h[c];
            j = c;
        }
        h[j] = e;
    }
}

#endif
