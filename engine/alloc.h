/*
 * alloc.h - allocation failures and growing arrays, after libgit2's
 * GIT_ERROR_CHECK_ALLOC and git_array: the "out of memory" message is set
 * in one place, where the allocation failed, and an array doubles in one
 * place. internal.h and codec_internal.h include it; names start with
 * bs__/BS_ as everywhere in the engine.
 */
#ifndef BS_ALLOC_H
#define BS_ALLOC_H

#include "bagstore.h"

#include <stddef.h>

/* BS_ENOMEM with its message in the error slot: `return bs__oom();`, or
 * `rc = bs__oom(); goto done;`. */
static inline int bs__oom(void)
{
	return bs_error(BS_ENOMEM, "out of memory");
}

/* Return BS_ENOMEM (bs__oom) from the calling function when p is NULL. */
#define BS_ERR_ALLOC(p) \
	do { \
		if (!(p)) \
			return bs__oom(); \
	} while (0)

/* Room for one more element at the end of an array: `ptr` (an lvalue of
 * type T *) holds `len` elements and room for `cap` (a size_t lvalue). When
 * it is full, ptr is reallocated to double the room (`first` elements when
 * empty) and cap updated. 0, or BS_ENOMEM with ptr and cap unchanged (the
 * elements still the caller's). Then `ptr[len++] = x` is safe. */
#define BS_ARRAY_GROW(ptr, len, cap, first) \
	((len) < (cap) ? 0 : bs__array_grow((void **)&(ptr), &(cap), sizeof *(ptr), (first)))

/* BS_ARRAY_GROW's work when the array is full (bytes.c). */
int bs__array_grow(void **ptr, size_t *cap, size_t size, size_t first);

#endif
