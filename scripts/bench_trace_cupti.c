/*
 * The bare CUPTI client of scripts/bench_trace.py's diagnostic modes `cupti-kernels`, `cupti-launch`,
 * `cupti-launch-records` and `cupti-launch-domains`: the activity records Score-P without `driver` asks CUPTI for (concurrent kernels
 * and memory copies). No Score-P, no trace: each completed buffer is walked, its records counted
 * by kind, and freed. What a process pays with this client loaded is what CUPTI's kernel
 * recording costs by itself, the floor of any tracer built on CUPTI's activity API on that GPU;
 * what Score-P without `driver` pays beyond it is Score-P's own handling.
 *
 * With launch callbacks (`cupti-launch`) it also subscribes to the driver API callbacks that
 * launch-only Score-P enables (names beginning with cuLaunch, cuGraphLaunch, cuMemcpy or
 * cuMemset, each enabled with cuptiEnableCallback), and at each call's entry and exit stores a
 * clock_gettime stamp (Score-P's timer in the artifact), the callback id and the correlation id
 * (what links a launch to its kernel record) in a thread-local ring. That is the least a tracer
 * with launch records does: what launch-only Score-P pays beyond it is Score-P's own.
 *
 * With launch records instead (`cupti-launch-records`) it subscribes to no callback: it asks CUPTI for an
 * activity record of each of those same driver calls (cuptiActivityEnableDriverApi per callback id,
 * CUPTI_ACTIVITY_KIND_DRIVER records: start, end, thread and correlation id, written by CUPTI into the
 * activity buffers beside the kernel records). That is how a tracer could keep its launch records with
 * no code of its own on the launch path; a kernel record carries the correlation id of the launch record
 * of the call that launched it (copies and memsets have launch records and no kernel record). At its end
 * the client counts the kernel records whose correlation id a launch record carries: each kernel record's
 * id is kept in a list and each launch record's id in a bitmap, as the buffers complete, so that the count
 * does not depend on the order in which CUPTI hands the buffers over, and kernel records that share an id
 * each count. An id at or above 2^25, or a kernel record beyond the list's 2^24 entries, counts as not
 * linked. The client only counts: what a tracer's own handling of such records costs is not measured.
 *
 * With one of CUPTI's own settings changed (`cupti-kernels-pinned`: the profiling data in page-locked host
 * memory; `cupti-kernels-shared`: one stream of activity buffers for all threads) it asks for what
 * `cupti-kernels` asks for: whether CUPTI's own cost, that floor, moves with the setting.
 *
 * With the resource and synchronisation domains as well (`cupti-launch-domains`) it also enables the
 * two whole callback domains Score-P enables beside its driver callbacks (CUPTI_CB_DOMAIN_RESOURCE:
 * contexts, streams, modules; CUPTI_CB_DOMAIN_SYNCHRONIZE: context and stream synchronisations) and
 * only counts their callbacks: what that subscription asks of CUPTI, apart from anything Score-P
 * does in its callbacks.
 *
 * Built by bench_trace.py on the GPU machine, against the toolkit's CUPTI (the one Score-P loads; at
 * run time this client uses the libcupti.so.13 its process loaded first, PyTorch's wheel copy, which
 * on the lent H200 is the same file by its sha256):
 *   cc -O2 -shared -fPIC -o libbench_trace_cupti.so bench_trace_cupti.c -I$CUPTI/include \
 *      $CUPTI/lib/libcupti.so -Wl,-rpath,$CUPTI/lib
 * (a wheel's CUPTI, nvidia/cu13, has only the versioned libcupti.so.13: that file is linked instead)
 * and called through ctypes: bench_cupti_start(buffer_bytes, options) before the process
 * makes its CUDA context, bench_cupti_stop(counts) at its end. Both return a CUptiResult (0: success);
 * bench_cupti_error(code) is CUPTI's text for it.
 */
#include <cupti.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t             buffer_bytes = 4u << 20;
static atomic_ullong      kernels, memcpys, others, buffers, dropped, lost_buffers;
static atomic_ullong      launch_calls; /* callbacks received: a call's entry and its exit count 2 */
static atomic_ullong      domain_calls; /* resource and synchronisation callbacks received */
static atomic_ullong      launch_records; /* CUPTI_ACTIVITY_KIND_DRIVER records (launch records mode) */
/* launch records mode: the correlation id of each kernel record, in a list (at most KERNEL_IDS entries;
   pages are touched only as it fills), and of each launch record, one bit each (an id at or above ID_BITS
   is not kept, so a kernel record of that id counts as not linked) */
enum { ID_BITS = 1u << 25, ID_WORDS = ID_BITS / 64, KERNEL_IDS = 1u << 24 };
static uint32_t*          kernel_ids;
static atomic_ullong      kernel_ids_used;
static _Atomic uint64_t*  launch_ids;
static const unsigned int ALIGNMENT = 8; /* CUPTI wants activity buffers 8-byte aligned */
static CUpti_SubscriberHandle subscriber;
static int                    subscribed;

/* what a launch record holds: the time, the callback id and site, the correlation id */
typedef struct
{
    uint64_t ns;
    uint32_t cbid_site;
    uint32_t correlation;
} launch_event;
enum { RING = 4096 }; /* a power of two */
static __thread launch_event ring[ RING ];
static __thread unsigned int ring_next;

static void CUPTIAPI
on_driver_call( void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data )
{
    const CUpti_CallbackData* info = data;
    struct timespec           ts;
    launch_event*             e;
    (void)userdata;
    if ( domain != CUPTI_CB_DOMAIN_DRIVER_API )
    {
        atomic_fetch_add_explicit( &domain_calls, 1, memory_order_relaxed );
        return;
    }
    e = &ring[ ring_next++ & ( RING - 1 ) ];
    clock_gettime( CLOCK_MONOTONIC, &ts );
    e->ns          = ( uint64_t )ts.tv_sec * 1000000000u + ( uint64_t )ts.tv_nsec;
    e->cbid_site   = ( ( uint32_t )cbid << 1 ) | ( info->callbackSite == CUPTI_API_EXIT );
    e->correlation = info->correlationId;
    atomic_fetch_add_explicit( &launch_calls, 1, memory_order_relaxed );
}

/* whether a driver call is one launch-only Score-P records: by name, as 8.4-cupti-launch-callbacks.patch
   chooses them */
static int
is_launch_call( uint32_t cbid )
{
    static const char* const prefixes[] = { "cuLaunch", "cuGraphLaunch", "cuMemcpy", "cuMemset", NULL };
    const char*              name       = NULL;
    if ( cuptiGetCallbackName( CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name ) != CUPTI_SUCCESS || name == NULL )
    {
        return 0;
    }
    for ( const char* const* p = prefixes; *p != NULL; p++ )
    {
        if ( strncmp( name, *p, strlen( *p ) ) == 0 )
        {
            return 1;
        }
    }
    return 0;
}

/* the driver callbacks launch-only Score-P enables */
static CUptiResult
subscribe_launches( int with_domains )
{
    CUptiResult r = cuptiSubscribe( &subscriber, on_driver_call, NULL );
    if ( r != CUPTI_SUCCESS )
    {
        return r;
    }
    subscribed = 1;
    for ( uint32_t cbid = CUPTI_DRIVER_TRACE_CBID_INVALID + 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++ )
    {
        if ( is_launch_call( cbid ) )
        {
            r = cuptiEnableCallback( 1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid );
            if ( r != CUPTI_SUCCESS )
            {
                return r;
            }
        }
    }
    if ( with_domains )
    {
        r = cuptiEnableDomain( 1, subscriber, CUPTI_CB_DOMAIN_RESOURCE );
        if ( r == CUPTI_SUCCESS )
        {
            r = cuptiEnableDomain( 1, subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE );
        }
    }
    return r;
}

/* an activity record of each of those driver calls, with no callback (launch records mode) */
static CUptiResult
record_launches( void )
{
    kernel_ids = calloc( KERNEL_IDS, sizeof( uint32_t ) );
    launch_ids = calloc( ID_WORDS, sizeof( uint64_t ) );
    if ( kernel_ids == NULL || launch_ids == NULL )
    {
        return CUPTI_ERROR_OUT_OF_MEMORY;
    }
    for ( uint32_t cbid = CUPTI_DRIVER_TRACE_CBID_INVALID + 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++ )
    {
        if ( is_launch_call( cbid ) )
        {
            CUptiResult r = cuptiActivityEnableDriverApi( cbid, 1 );
            if ( r != CUPTI_SUCCESS )
            {
                return r;
            }
        }
    }
    return CUPTI_SUCCESS;
}

static void
note_launch_id( uint32_t id )
{
    if ( launch_ids != NULL && id < ID_BITS )
    {
        atomic_fetch_or_explicit( &launch_ids[ id / 64 ], ( uint64_t )1 << ( id % 64 ), memory_order_relaxed );
    }
}

static void
note_kernel_id( uint32_t id )
{
    unsigned long long slot;
    if ( kernel_ids != NULL && ( slot = atomic_fetch_add( &kernel_ids_used, 1 ) ) < KERNEL_IDS )
    {
        kernel_ids[ slot ] = id;
    }
}

static void CUPTIAPI
requested( uint8_t** buffer, size_t* size, size_t* max_records )
{
    uint8_t* b = aligned_alloc( ALIGNMENT, buffer_bytes );
    if ( b == NULL )
    {
        atomic_fetch_add( &lost_buffers, 1 ); /* CUPTI drops records when given no buffer */
    }
    *buffer      = b;
    *size        = b ? buffer_bytes : 0;
    *max_records = 0; /* as many as fit */
    atomic_fetch_add( &buffers, 1 );
}

static void CUPTIAPI
completed( CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid )
{
    CUpti_Activity* record = NULL;
    size_t          n      = 0;
    (void)size;
    while ( cuptiActivityGetNextRecord( buffer, valid, &record ) == CUPTI_SUCCESS )
    {
        switch ( record->kind )
        {
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
                atomic_fetch_add( &kernels, 1 );
                note_kernel_id( ( ( const CUpti_ActivityKernel10* )record )->correlationId );
                break;
            case CUPTI_ACTIVITY_KIND_DRIVER:
                atomic_fetch_add( &launch_records, 1 );
                note_launch_id( ( ( const CUpti_ActivityAPI* )record )->correlationId );
                break;
            case CUPTI_ACTIVITY_KIND_MEMCPY:
                atomic_fetch_add( &memcpys, 1 );
                break;
            default:
                atomic_fetch_add( &others, 1 );
        }
    }
    if ( cuptiActivityGetNumDroppedRecords( context, stream, &n ) == CUPTI_SUCCESS )
    {
        atomic_fetch_add( &dropped, n );
    }
    free( buffer );
}

/* options: BENCH_CUPTI_LAUNCHES (the launch callbacks), BENCH_CUPTI_DOMAINS (with them, the resource and
   synchronisation domains), BENCH_CUPTI_LAUNCH_RECORDS (activity records of the same driver calls), and two of
   CUPTI's own settings, each against its default: BENCH_CUPTI_PINNED (CUPTI keeps the kernels', copies' and
   memsets' profiling data in page-locked host memory, CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED = 1,
   instead of device memory, which the host must then fetch), BENCH_CUPTI_SHARED_BUFFERS (one stream of
   activity buffers for all threads, CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER = 0, instead of buffers
   per thread) */
enum
{
    BENCH_CUPTI_LAUNCHES       = 1,
    BENCH_CUPTI_DOMAINS        = 2,
    BENCH_CUPTI_LAUNCH_RECORDS = 4,
    BENCH_CUPTI_PINNED         = 8,
    BENCH_CUPTI_SHARED_BUFFERS = 16
};

static CUptiResult
set_flag( CUpti_ActivityAttribute attribute, uint8_t value )
{
    size_t size = sizeof( value );
    return cuptiActivitySetAttribute( attribute, &size, &value );
}

int
bench_cupti_start( unsigned long long bytes, int options )
{
    CUptiResult r;
    if ( bytes >= 4096 )
    {
        buffer_bytes = ( size_t )bytes;
    }
    r = CUPTI_SUCCESS;
    if ( options & BENCH_CUPTI_PINNED )
    {
        r = set_flag( CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 1 );
    }
    if ( r == CUPTI_SUCCESS && ( options & BENCH_CUPTI_SHARED_BUFFERS ) )
    {
        r = set_flag( CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 0 ); /* before the callbacks are registered */
    }
    if ( r == CUPTI_SUCCESS )
    {
        r = cuptiActivityRegisterCallbacks( requested, completed );
    }
    if ( r == CUPTI_SUCCESS )
    {
        r = cuptiActivityEnable( CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL );
    }
    if ( r == CUPTI_SUCCESS )
    {
        r = cuptiActivityEnable( CUPTI_ACTIVITY_KIND_MEMCPY );
    }
    if ( r == CUPTI_SUCCESS && ( options & BENCH_CUPTI_LAUNCHES ) )
    {
        r = subscribe_launches( ( options & BENCH_CUPTI_DOMAINS ) != 0 );
    }
    if ( r == CUPTI_SUCCESS && ( options & BENCH_CUPTI_LAUNCH_RECORDS ) )
    {
        r = record_launches();
    }
    return ( int )r;
}

/* counts: kernels, memcpys, other records (launch records not among them), buffers handed to CUPTI,
   records CUPTI dropped, buffers not given, driver callbacks received (0 without launch callbacks),
   resource and synchronisation callbacks received (0 without those domains), launch records, kernel
   records whose correlation id a launch record carries (both 0 without launch records) */
int
bench_cupti_stop( unsigned long long counts[ 10 ] )
{
    unsigned long long linked = 0;
    CUptiResult r = cuptiActivityFlushAll( CUPTI_ACTIVITY_FLAG_FLUSH_FORCED );
    if ( subscribed )
    {
        cuptiUnsubscribe( subscriber );
        subscribed = 0;
    }
    cuptiActivityDisable( CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL );
    cuptiActivityDisable( CUPTI_ACTIVITY_KIND_MEMCPY );
    if ( kernel_ids != NULL && launch_ids != NULL )
    {
        /* the launch records were asked for per driver call: switched off the same way */
        for ( uint32_t cbid = CUPTI_DRIVER_TRACE_CBID_INVALID + 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; cbid++ )
        {
            if ( is_launch_call( cbid ) )
            {
                cuptiActivityEnableDriverApi( cbid, 0 );
            }
        }
        unsigned long long used = atomic_load( &kernel_ids_used );
        for ( unsigned long long k = 0; k < used && k < KERNEL_IDS; k++ )
        {
            uint32_t id = kernel_ids[ k ];
            linked += id < ID_BITS && ( atomic_load( &launch_ids[ id / 64 ] ) >> ( id % 64 ) & 1u );
        }
    }
    counts[ 0 ] = atomic_load( &kernels );
    counts[ 1 ] = atomic_load( &memcpys );
    counts[ 2 ] = atomic_load( &others );
    counts[ 3 ] = atomic_load( &buffers );
    counts[ 4 ] = atomic_load( &dropped );
    counts[ 5 ] = atomic_load( &lost_buffers );
    counts[ 6 ] = atomic_load( &launch_calls );
    counts[ 7 ] = atomic_load( &domain_calls );
    counts[ 8 ] = atomic_load( &launch_records );
    counts[ 9 ] = linked;
    return ( int )r;
}

const char*
bench_cupti_error( int code )
{
    const char* text = NULL;
    if ( cuptiGetResultString( ( CUptiResult )code, &text ) != CUPTI_SUCCESS || text == NULL )
    {
        return "unknown CUPTI result";
    }
    return text;
}
