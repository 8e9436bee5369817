/*
 * Feeds scripts/bench_trace_cupti.c's buffer-completion callback with activity buffers built here and
 * prints what the client counts, as JSON (tests/test_bench_trace.py builds and runs it against a real
 * CUPTI, whose cuptiActivityGetNextRecord walks the buffers; no GPU is needed). The buffers: kernel
 * records of correlation ids 5, 5 (two kernels of one launch) and 9, a memcpy record, a launch record
 * of id 3; then, in a later buffer, launch records of ids 5 and 7; then a kernel and a launch record
 * of an id beyond the client's bitmap (2^25), which the client counts as not linked.
 */
#include "../scripts/bench_trace_cupti.c"

#include <stdio.h>

static size_t
put( uint8_t* buffer, size_t at, const void* record, size_t bytes )
{
    memcpy( buffer + at, record, bytes );
    return at + bytes;
}

static size_t
kernel( uint8_t* buffer, size_t at, uint32_t id )
{
    CUpti_ActivityKernel10 k;
    memset( &k, 0, sizeof k );
    k.kind          = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = id;
    k.start         = 1;
    k.end           = 2;
    return put( buffer, at, &k, sizeof k );
}

static size_t
launch( uint8_t* buffer, size_t at, uint32_t id )
{
    CUpti_ActivityAPI a;
    memset( &a, 0, sizeof a );
    a.kind          = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid          = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    a.correlationId = id;
    return put( buffer, at, &a, sizeof a );
}

static size_t
copy( uint8_t* buffer, size_t at )
{
    CUpti_ActivityMemcpy6 m;
    memset( &m, 0, sizeof m );
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    return put( buffer, at, &m, sizeof m );
}

int
main( void )
{
    enum { BYTES = 1 << 16 };
    unsigned long long counts[ 10 ];
    size_t             n;
    uint8_t*           first  = aligned_alloc( 8, BYTES );
    uint8_t*           second = aligned_alloc( 8, BYTES );
    uint8_t*           third  = aligned_alloc( 8, BYTES );
    int                status = ( int )record_launches(); /* the lists; enabling may fail without a GPU */
    if ( kernel_ids == NULL || launch_ids == NULL || first == NULL || second == NULL || third == NULL )
    {
        return 1;
    }
    n = kernel( first, 0, 5 );
    n = kernel( first, n, 5 );
    n = kernel( first, n, 9 );
    n = copy( first, n );
    n = launch( first, n, 3 );
    completed( NULL, 0, first, BYTES, n );
    n = launch( second, 0, 5 );
    n = launch( second, n, 7 );
    completed( NULL, 0, second, BYTES, n );
    n = kernel( third, 0, ID_BITS );
    n = launch( third, n, ID_BITS );
    completed( NULL, 0, third, BYTES, n );
    bench_cupti_stop( counts );
    printf( "{\"kernels\": %llu, \"memcpys\": %llu, \"other_records\": %llu, \"launch_records\": %llu, "
            "\"linked_kernels\": %llu, \"enable_status\": %d}\n",
            counts[ 0 ], counts[ 1 ], counts[ 2 ], counts[ 8 ], counts[ 9 ], status );
    return 0;
}
