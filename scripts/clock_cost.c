/* What one reading of the clock costs on this machine: clock_gettime through the C library (the vDSO
 * where the kernel's clocksource allows it) and through the system call itself, for the clocks a
 * tracer stamps its events with, and the CPU's time-stamp counter (rdtsc, x86-64 only). Score-P's
 * clock_gettime timer (the artifact's SCOREP_TIMER) reads CLOCK_MONOTONIC_RAW, the bench's bare CUPTI
 * client CLOCK_MONOTONIC; a launch record takes two readings (its entry and its exit).
 *
 * Build and run:  cc -O2 -o clock_cost scripts/clock_cost.c && ./clock_cost
 * Prints one JSON object: the kernel's current and available clocksources, and per reading the median
 * over 9 batches of the nanoseconds one call took (each batch timed with CLOCK_MONOTONIC). Where the
 * C library's reading costs about what the system call costs, the vDSO is not serving that clock. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { BATCHES = 9 };

static volatile uint64_t sink; /* keeps the readings from being optimised away */

static double
now_ns( void )
{
    struct timespec ts;
    clock_gettime( CLOCK_MONOTONIC, &ts );
    return ( double )ts.tv_sec * 1e9 + ( double )ts.tv_nsec;
}

static int
by_value( const void* a, const void* b )
{
    double x = *( const double* )a, y = *( const double* )b;
    return ( x > y ) - ( x < y );
}

/* the median over the batches of one reading's ns; kind 0: libc clock_gettime, 1: the system call, 2: rdtsc */
static double
cost( int kind, clockid_t clock, long calls )
{
    double per[ BATCHES ];
    for ( int b = 0; b < BATCHES; b++ )
    {
        double t0 = now_ns();
        for ( long i = 0; i < calls; i++ )
        {
            struct timespec ts = { 0, 0 };
            if ( kind == 0 )
            {
                clock_gettime( clock, &ts );
            }
            else if ( kind == 1 )
            {
                syscall( SYS_clock_gettime, clock, &ts );
            }
            else
            {
#if defined( __x86_64__ )
                uint32_t lo, hi;
                __asm__ __volatile__ ( "rdtsc" : "=a" ( lo ), "=d" ( hi ) );
                ts.tv_nsec = ( long )( ( ( uint64_t )hi << 32 ) | lo );
#endif
            }
            sink += ( uint64_t )ts.tv_nsec;
        }
        per[ b ] = ( now_ns() - t0 ) / ( double )calls;
    }
    qsort( per, BATCHES, sizeof( double ), by_value );
    return per[ BATCHES / 2 ];
}

/* the first line of a sysfs file, without its newline, as a JSON string (null where it cannot be read) */
static void
print_file( const char* key, const char* path )
{
    char  line[ 256 ] = "";
    FILE* f           = fopen( path, "r" );
    if ( f == NULL || fgets( line, sizeof( line ), f ) == NULL )
    {
        printf( "\"%s\": null, ", key );
    }
    else
    {
        line[ strcspn( line, "\n" ) ] = '\0';
        for ( char* c = line; *c; c++ )
        {
            if ( *c == '"' || *c == '\\' || ( unsigned char )*c < 0x20 )
            {
                *c = ' ';
            }
        }
        printf( "\"%s\": \"%s\", ", key, line );
    }
    if ( f != NULL )
    {
        fclose( f );
    }
}

int
main( int argc, char** argv )
{
    char* end   = NULL;
    long  calls = argc > 1 ? strtol( argv[ 1 ], &end, 10 ) : 200000;
    if ( calls <= 0 || ( argc > 1 && ( end == argv[ 1 ] || *end != '\0' ) ) )
    {
        fprintf( stderr, "clock_cost: the number of calls per batch must be a positive integer\n" );
        return 2;
    }
    printf( "{" );
    print_file( "clocksource", "/sys/devices/system/clocksource/clocksource0/current_clocksource" );
    print_file( "clocksources_available", "/sys/devices/system/clocksource/clocksource0/available_clocksource" );
    printf( "\"calls_per_batch\": %ld, \"batches\": %d, ", calls, BATCHES );
    printf( "\"ns_per_reading\": {" );
    printf( "\"clock_gettime(CLOCK_MONOTONIC)\": %.1f, ", cost( 0, CLOCK_MONOTONIC, calls ) );
    printf( "\"clock_gettime(CLOCK_MONOTONIC_RAW)\": %.1f, ", cost( 0, CLOCK_MONOTONIC_RAW, calls ) );
    printf( "\"clock_gettime(CLOCK_REALTIME)\": %.1f, ", cost( 0, CLOCK_REALTIME, calls ) );
    printf( "\"syscall clock_gettime(CLOCK_MONOTONIC)\": %.1f, ", cost( 1, CLOCK_MONOTONIC, calls / 10 + 1 ) );
    printf( "\"syscall clock_gettime(CLOCK_MONOTONIC_RAW)\": %.1f", cost( 1, CLOCK_MONOTONIC_RAW, calls / 10 + 1 ) );
#if defined( __x86_64__ )
    printf( ", \"rdtsc\": %.1f", cost( 2, CLOCK_MONOTONIC, calls ) );
#endif
    printf( "}}\n" );
    return 0;
}
