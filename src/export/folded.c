/* export: folding and flame layout (see export/folded.h).
 * Names are sorted once and replaced by their rank; stacks are then sorted
 * as rank sequences, which orders them like their folded text (frame names
 * end in ')' so none is a proper prefix of another). Duplicates are summed. */
#define _GNU_SOURCE 1 /* qsort_r */
#include "export/folded.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

typedef struct {
    const uint32_t *ranks; /* into f->rank_ids */
    uint32_t depth;
    int64_t value;
} line;

struct lp_folded {
    char **names;       /* sanitized copies, by original index */
    uint32_t *rank_of;  /* original index -> rank */
    uint32_t *name_of;  /* rank -> original index (first holder) */
    uint32_t *rank_ids; /* all stacks as ranks */
    line *lines;
    size_t n_lines, n_names;
    int64_t total;
};

/* qsort_r, not a file-level base pointer: folding runs without the GIL */
static int cmp_name_idx(const void *a, const void *b, void *names) {
    const char *const *base = names;
    return strcmp(base[*(const uint32_t *)a], base[*(const uint32_t *)b]);
}

static int cmp_line(const void *a, const void *b) {
    const line *x = a, *y = b;
    uint32_t n = x->depth < y->depth ? x->depth : y->depth;
    for (uint32_t i = 0; i < n; i++)
        if (x->ranks[i] != y->ranks[i]) return x->ranks[i] < y->ranks[i] ? -1 : 1;
    return (x->depth > y->depth) - (x->depth < y->depth);
}

static uint64_t hash_line(const line *l) {
    uint64_t h = 1469598103934665603ull ^ l->depth;
    for (uint32_t i = 0; i < l->depth; i++) h = (h ^ l->ranks[i]) * 1099511628211ull;
    return lp_hash_mix64(h);
}

/* Compacts lines[0..n) to distinct stacks (values summed, first order kept)
 * and adds every value to *total. Returns the new count, SIZE_MAX on OOM. */
static size_t merge_duplicates(line *lines, size_t n, int64_t *total) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    uint32_t *slots = malloc(cap * sizeof *slots);
    if (!slots) return SIZE_MAX;
    memset(slots, 0xff, cap * sizeof *slots);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        *total += lines[i].value;
        size_t j = (size_t)hash_line(&lines[i]) & (cap - 1);
        while (slots[j] != UINT32_MAX && cmp_line(&lines[slots[j]], &lines[i]) != 0) j = (j + 1) & (cap - 1);
        if (slots[j] != UINT32_MAX) {
            lines[slots[j]].value += lines[i].value;
        } else {
            slots[j] = (uint32_t)out;
            lines[out++] = lines[i];
        }
    }
    free(slots);
    return out;
}

static char *sanitized(const char *s) {
    size_t n = strlen(s);
    char *c = malloc(n + 1);
    if (!c) return NULL;
    for (size_t i = 0; i <= n; i++) c[i] = (s[i] == ';' || s[i] == '\n' || s[i] == '\r') ? '_' : s[i];
    if (n == 0) {
        free(c);
        c = strdup("_");
    }
    return c;
}

void lp_folded_free(lp_folded *f) {
    if (!f) return;
    for (size_t i = 0; i < f->n_names && f->names; i++) free(f->names[i]);
    free(f->names);
    free(f->rank_of);
    free(f->name_of);
    free(f->rank_ids);
    free(f->lines);
    free(f);
}

lp_folded *lp_folded_build(const char *const *names, size_t n_names, const uint32_t *ids,
                           const size_t *offsets, const int64_t *values, size_t n_stacks, const char **err) {
    if (n_stacks >= UINT32_MAX) {
        *err = "too many stacks";
        return NULL;
    }
    *err = "out of memory";
    lp_folded *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->n_names = n_names;
    f->names = calloc(n_names ? n_names : 1, sizeof(char *));
    f->rank_of = malloc(sizeof(uint32_t) * (n_names ? n_names : 1));
    f->name_of = malloc(sizeof(uint32_t) * (n_names ? n_names : 1));
    size_t n_ids = offsets[n_stacks];
    f->rank_ids = malloc(sizeof(uint32_t) * (n_ids ? n_ids : 1));
    f->lines = malloc(sizeof(line) * (n_stacks ? n_stacks : 1));
    if (!f->names || !f->rank_of || !f->name_of || !f->rank_ids || !f->lines) goto fail;
    for (size_t i = 0; i < n_names; i++)
        if (!(f->names[i] = sanitized(names[i]))) goto fail;
    /* rank names; equal texts share a rank so they merge */
    uint32_t *order = malloc(sizeof(uint32_t) * (n_names ? n_names : 1));
    if (!order) goto fail;
    for (size_t i = 0; i < n_names; i++) order[i] = (uint32_t)i;
    qsort_r(order, n_names, sizeof *order, cmp_name_idx, f->names);
    uint32_t rank = 0;
    for (size_t i = 0; i < n_names; i++) {
        if (i > 0 && strcmp(f->names[order[i]], f->names[order[i - 1]]) != 0) rank++;
        f->rank_of[order[i]] = rank;
        f->name_of[rank] = order[i];
    }
    free(order);
    size_t nl = 0;
    for (size_t s = 0; s < n_stacks; s++) {
        if (values[s] <= 0 || offsets[s + 1] <= offsets[s]) continue;
        for (size_t k = offsets[s]; k < offsets[s + 1]; k++) {
            if (ids[k] >= n_names) {
                *err = "frame id out of range";
                goto fail;
            }
            f->rank_ids[k] = f->rank_of[ids[k]];
        }
        f->lines[nl].ranks = &f->rank_ids[offsets[s]];
        f->lines[nl].depth = (uint32_t)(offsets[s + 1] - offsets[s]);
        f->lines[nl].value = values[s];
        nl++;
    }
    /* merge equal stacks through a hash table first, so the sort only sees
     * distinct stacks (a profile of 1M unfolded samples has few distinct ones) */
    size_t out = merge_duplicates(f->lines, nl, &f->total);
    if (out == SIZE_MAX) goto fail;
    qsort(f->lines, out, sizeof(line), cmp_line);
    f->n_lines = out;
    *err = NULL;
    return f;
fail:
    lp_folded_free(f);
    return NULL;
}

size_t lp_folded_count(const lp_folded *f) { return f->n_lines; }
int64_t lp_folded_total(const lp_folded *f) { return f->total; }

int lp_folded_write(const lp_folded *f, FILE *out) {
    for (size_t i = 0; i < f->n_lines; i++) {
        const line *l = &f->lines[i];
        for (uint32_t k = 0; k < l->depth; k++) {
            if (k) putc(';', out);
            fputs(f->names[f->name_of[l->ranks[k]]], out);
        }
        fprintf(out, " %lld\n", (long long)l->value);
    }
    return ferror(out) ? -1 : 0;
}

lp_flame_rect *lp_folded_flame(const lp_folded *f, int64_t min_width, size_t *n) {
    size_t cap = 1024, len = 0;
    lp_flame_rect *out = malloc(cap * sizeof *out);
    uint32_t maxd = 0;
    for (size_t i = 0; i < f->n_lines; i++)
        if (f->lines[i].depth > maxd) maxd = f->lines[i].depth;
    int64_t *start = malloc(sizeof(int64_t) * (maxd + 1));
    if (!out || !start) {
        free(out);
        free(start);
        return NULL;
    }
    const line *prev = NULL;
    int64_t x = 0;
    /* flow: close frames of prev that differ from line i, open new ones */
    for (size_t i = 0; i <= f->n_lines; i++) {
        const line *cur = i < f->n_lines ? &f->lines[i] : NULL;
        uint32_t common = 0;
        if (prev && cur)
            while (common < prev->depth && common < cur->depth && prev->ranks[common] == cur->ranks[common])
                common++;
        for (uint32_t d = prev ? prev->depth : 0; d-- > common;) {
            int64_t w = x - start[d];
            if (w < min_width) continue;
            if (len == cap) {
                lp_flame_rect *g = realloc(out, 2 * cap * sizeof *out);
                if (!g) {
                    free(out);
                    free(start);
                    return NULL;
                }
                out = g;
                cap *= 2;
            }
            out[len++] = (lp_flame_rect){d, f->name_of[prev->ranks[d]], start[d], w};
        }
        if (!cur) break;
        for (uint32_t d = common; d < cur->depth; d++) start[d] = x;
        x += cur->value;
        prev = cur;
    }
    free(start);
    *n = len;
    return out;
}
