/*
 * A preloaded filter between Score-P and CUPTI for scripts/bench_trace.py's diagnostic mode
 * `scorep-launch-nosync-chunk4m`: the default Score-P mode, except that CUPTI's synchronisation
 * callback domain is never enabled. Score-P 8.4 enables that whole domain beside its driver callbacks
 * (scorep_cupti_callbacks_enable in src/adapters/cuda/scorep_cupti_callbacks.c) only to drain its
 * activity buffers at a context synchronisation; without it Score-P drains them at the end of the
 * measurement, which the benchmark's processes reach anyway (each mode's kernels are counted from its
 * trace, so a lost record would show).
 *
 * It defines cuptiEnableDomain: a call that enables CUPTI_CB_DOMAIN_SYNCHRONIZE is answered with
 * success and not passed on; every other call goes to the next definition (CUPTI's, found with
 * dlsym(RTLD_NEXT)). Loaded through LD_PRELOAD ahead of Score-P's libraries (the Python bindings put an
 * LD_PRELOAD they find in front of their own), it is found before libcupti.so. How many calls it held
 * back and passed on is read by the child through cupti_domain_filter_counts, so a run in which the
 * filter saw no call (Score-P bound to CUPTI some other way) is told apart from one in which it worked.
 *
 * Needs no CUDA to build: cc -O2 -shared -fPIC -o libcupti_domain_filter.so cupti_domain_filter.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* CUpti_CallbackDomain's values, as cupti_callbacks.h numbers them (CUDA 10 to 13 alike) */
enum { DOMAIN_SYNCHRONIZE = 4 };
enum { CUPTI_RESULT_SUCCESS = 0, CUPTI_RESULT_NOT_INITIALIZED = 15 };

typedef int ( *enable_domain_fn )( uint32_t enable, void* subscriber, int domain );

static atomic_ullong held_back, passed_on;

int
cuptiEnableDomain( uint32_t enable, void* subscriber, int domain )
{
    static enable_domain_fn next;
    if ( enable && domain == DOMAIN_SYNCHRONIZE )
    {
        atomic_fetch_add( &held_back, 1 );
        return CUPTI_RESULT_SUCCESS;
    }
    if ( next == NULL )
    {
        next = ( enable_domain_fn )dlsym( RTLD_NEXT, "cuptiEnableDomain" );
        if ( next == NULL )
        {
            return CUPTI_RESULT_NOT_INITIALIZED; /* no CUPTI behind the filter: say so, as CUPTI would */
        }
    }
    atomic_fetch_add( &passed_on, 1 );
    return next( enable, subscriber, domain );
}

/* counts[0]: enabling calls for the synchronisation domain held back; counts[1]: calls passed on */
void
cupti_domain_filter_counts( unsigned long long counts[ 2 ] )
{
    counts[ 0 ] = atomic_load( &held_back );
    counts[ 1 ] = atomic_load( &passed_on );
}
