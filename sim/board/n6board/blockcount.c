/* Executions per translated block, counted by a native block hook: the simulated board's exact
 * instruction count costs one hash-table increment per block instead of a Python call. The
 * Python side multiplies each (address, size) count by the block's Thumb-2 instruction count.
 *
 * Clock mode (bc_clock): the hook also keeps the running total of instructions, asking Python
 * once per new block how many instructions it holds, and calls `due` once when the total reaches
 * the deadline, so that a board can stop the emulation for its next timed event at native speed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint64_t key, n, insns; } slot_t;
typedef uint64_t (*insns_fn)(uint64_t address, uint32_t size);
typedef void (*due_fn)(void);
typedef struct {
    slot_t *slots; uint64_t mask, used;
    insns_fn insns; due_fn due; uint64_t total, deadline;   /* clock mode */
    uint64_t last;                                          /* key of the block that started last */
} table_t;

table_t *bc_new(void) {
    table_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->mask = 1023;
    t->slots = calloc(t->mask + 1, sizeof *t->slots);
    if (!t->slots) { free(t); return NULL; }
    return t;
}

void bc_free(table_t *t) { if (t) { free(t->slots); free(t); } }

static slot_t *find(slot_t *slots, uint64_t mask, uint64_t key) {
    uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 20 & mask;
    while (slots[i].key && slots[i].key != key) i = (i + 1) & mask;
    return &slots[i];
}

static void grow(table_t *t) {
    uint64_t mask = t->mask * 2 + 1;
    slot_t *slots = calloc(mask + 1, sizeof *slots);
    if (!slots) abort();
    for (uint64_t i = 0; i <= t->mask; i++)
        if (t->slots[i].key) *find(slots, mask, t->slots[i].key) = t->slots[i];
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
}

/* unicorn's block hook (uc_cb_hookcode_t); key = address << 16 | size, never 0 for a Thumb block */
void bc_hook(void *uc, uint64_t address, uint32_t size, table_t *t) {
    uint64_t key = address << 16 | (size & 0xFFFF);
    slot_t *s = find(t->slots, t->mask, key);
    if (!s->key) {
        if (2 * (t->used + 1) > t->mask) { grow(t); s = find(t->slots, t->mask, key); }
        s->key = key;
        t->used++;
    }
    s->n++;
    t->last = key;
    if (t->insns) {
        if (!s->insns) s->insns = t->insns(address, size);
        t->total += s->insns;
        if (t->total >= t->deadline) { t->deadline = UINT64_MAX; t->due(); }
    }
}

/* Clock mode: `insns(address, size)` gives a new block's instruction count, `due()` is called
 * when the total reaches the deadline (then the deadline is cleared). */
void bc_clock(table_t *t, insns_fn insns, due_fn due) {
    t->insns = insns;
    t->due = due;
    t->deadline = UINT64_MAX;
}

void bc_set_deadline(table_t *t, uint64_t deadline) { t->deadline = deadline; }

uint64_t bc_total(table_t *t) { return t->total; }

/* address << 16 | size of the block that started last */
uint64_t bc_last(table_t *t) { return t->last; }

uint64_t bc_used(table_t *t) { return t->used; }

/* Copy the used slots out (keys, counts) and empty the table. */
void bc_take(table_t *t, uint64_t *keys, uint64_t *counts) {
    uint64_t j = 0;
    for (uint64_t i = 0; i <= t->mask; i++)
        if (t->slots[i].key) { keys[j] = t->slots[i].key; counts[j] = t->slots[i].n; j++; }
    memset(t->slots, 0, (t->mask + 1) * sizeof *t->slots);
    t->used = 0;
}

/* Accesses to one memory region, counted by a native memory hook (uc_cb_hookmem_t): the
 * per-region reads and writes of a profile cost an increment per access, not a Python call. */
typedef struct { uint64_t reads, read_bytes, writes, write_bytes; } access_t;

void mc_hook(void *uc, int type, uint64_t address, int size, int64_t value, access_t *a) {
    (void)uc; (void)address; (void)value;
    if (type == 17) { a->writes++; a->write_bytes += (uint64_t)size; }   /* UC_MEM_WRITE */
    else { a->reads++; a->read_bytes += (uint64_t)size; }                 /* UC_MEM_READ */
}
