/*
 * The bare CUPTI client of scripts/bench_trace.py's diagnostic mode `cupti-kernels`: the activity
 * records Score-P without `driver` asks CUPTI for (concurrent kernels and memory copies), and
 * nothing else. No callback subscription, no Score-P, no trace: each completed buffer is walked,
 * its records counted by kind, and freed. What a process pays with this client loaded is what
 * CUPTI's kernel recording costs by itself, the floor of any tracer built on CUPTI's activity API
 * on that GPU; what Score-P without `driver` pays beyond it is Score-P's own handling.
 *
 * Built by bench_trace.py on the GPU machine, against the toolkit's CUPTI (the one Score-P uses):
 *   cc -O2 -shared -fPIC -o libbench_trace_cupti.so bench_trace_cupti.c -I$CUPTI/include \
 *      -L$CUPTI/lib -lcupti -Wl,-rpath,$CUPTI/lib
 * and called through ctypes: bench_cupti_start(buffer_bytes) before the process makes its CUDA
 * context, bench_cupti_stop(counts) at its end. Both return a CUptiResult (0: success);
 * bench_cupti_error(code) is CUPTI's text for it.
 */
#include <cupti.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

static size_t             buffer_bytes = 4u << 20;
static atomic_ullong      kernels, memcpys, others, buffers, dropped, lost_buffers;
static const unsigned int ALIGNMENT = 8; /* CUPTI wants activity buffers 8-byte aligned */

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

int
bench_cupti_start( unsigned long long bytes )
{
    CUptiResult r;
    if ( bytes >= 4096 )
    {
        buffer_bytes = ( size_t )bytes;
    }
    r = cuptiActivityRegisterCallbacks( requested, completed );
    if ( r == CUPTI_SUCCESS )
    {
        r = cuptiActivityEnable( CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL );
    }
    if ( r == CUPTI_SUCCESS )
    {
        r = cuptiActivityEnable( CUPTI_ACTIVITY_KIND_MEMCPY );
    }
    return ( int )r;
}

/* counts: kernels, memcpys, other records, buffers handed to CUPTI, records CUPTI dropped, buffers not given */
int
bench_cupti_stop( unsigned long long counts[ 6 ] )
{
    CUptiResult r = cuptiActivityFlushAll( CUPTI_ACTIVITY_FLAG_FLUSH_FORCED );
    cuptiActivityDisable( CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL );
    cuptiActivityDisable( CUPTI_ACTIVITY_KIND_MEMCPY );
    counts[ 0 ] = atomic_load( &kernels );
    counts[ 1 ] = atomic_load( &memcpys );
    counts[ 2 ] = atomic_load( &others );
    counts[ 3 ] = atomic_load( &buffers );
    counts[ 4 ] = atomic_load( &dropped );
    counts[ 5 ] = atomic_load( &lost_buffers );
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
