/*
 * host_sampler.c: where a process's host CPU time goes, by sampling its call stacks.
 *
 * Loaded with LD_PRELOAD=libhost_sampler.so and HOST_SAMPLER_OUT=DIR. A SIGPROF timer
 * (ITIMER_PROF: the process's CPU time, HOST_SAMPLER_HZ times a second, 997 by default) stops
 * whichever thread is running; the handler stores that thread's id and up to DEPTH return
 * addresses of its stack (glibc's backtrace) in a table made at start. With
 * HOST_SAMPLER_CLOCK=wall the timer counts wall-clock time instead (CLOCK_MONOTONIC) and its
 * signal goes to the thread that loaded the library (a program's main thread) whether it runs
 * or waits: the samples then also show where that thread waits (in a system call, a lock, a
 * synchronisation), which CPU-time samples never do. Where the program calls
 * host_sampler_mark(1) and host_sampler_mark(0) (bench_trace.py does, around each timed step,
 * found through ctypes), only the samples taken between the two calls are kept from then on,
 * on whichever thread (PyTorch runs a step's backward pass on a thread of its own while the
 * stepping thread waits); with HOST_SAMPLER_MARKED=1 also none before the first mark (a process
 * that never marks then keeps none and writes nothing). Otherwise every sample is kept.
 *
 * The timer outlives execve, which resets the handler: a signal between the exec and this
 * library's constructor in the new program would kill it. So execve, execv, execvp and execvpe
 * (python -m scorep re-executes itself) are wrapped here to stop the timer first (and restart
 * it where the exec fails); a forked child starts with an empty table and a timer of its own.
 *
 * At exit the table is written to DIR/samples-PID.bin next to a copy of /proc/self/maps
 * (DIR/maps-PID.txt) and the GNU build id of every loaded object (DIR/buildids-PID.txt: "ID
 * PATH" per line, the path resolved as the maps show it), so that scripts/host_profile.py can
 * name each address's library and, with the symbol table of that very file (it checks the build
 * id), its function. Nothing is symbolised in the process.
 *
 * Built on the machine that runs it (bench_trace.py --sample does it):
 *   cc -O2 -shared -fPIC -o libhost_sampler.so host_sampler.c -ldl -lpthread -lrt
 *
 * File layout (little-endian, as written by this machine): a header of 8 bytes "HSMPLv2\n",
 * then uint32 pid, uint32 hz, uint32 clock (0: CPU time, 1: wall-clock time of the loading
 * thread), uint32 0, uint64 samples kept, uint64 samples not kept for want of room;
 * then per sample: uint32 thread id, uint32 depth, depth x uint64 addresses (innermost first;
 * the first two frames are the handler's own and the signal trampoline).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 48
#define MAX_SAMPLES 200000

struct sample
{
    uint32_t tid;
    uint32_t depth;
    void*    frames[ DEPTH ];
};

static struct sample* table;
static atomic_ulong   used;
static atomic_ulong   lost;
static atomic_int     window_open; /* between host_sampler_mark(1) and host_sampler_mark(0) */
static atomic_int     ever_marked;
static unsigned       hz = 997;
static int            wall_clock; /* HOST_SAMPLER_CLOCK=wall: a per-thread CLOCK_MONOTONIC timer */
static timer_t        wall_timer;
static char           out_dir[ 4000 ];

static uint32_t
thread_id( void )
{
    static __thread uint32_t tid;
    if ( tid == 0 )
    {
        tid = ( uint32_t )syscall( SYS_gettid );
    }
    return tid;
}

/* Called by the program: 1 where the interval of interest begins, 0 where it ends. */
void
host_sampler_mark( int on )
{
    atomic_store( &ever_marked, 1 );
    atomic_store( &window_open, on != 0 );
}

static void
on_sigprof( int sig, siginfo_t* info, void* context )
{
    ( void )sig;
    ( void )info;
    ( void )context;
    int      saved = errno;
    uint32_t tid   = thread_id();
    if ( atomic_load( &ever_marked ) && !atomic_load( &window_open ) )
    {
        errno = saved;
        return;
    }
    unsigned long i = atomic_fetch_add( &used, 1 );
    if ( i >= MAX_SAMPLES )
    {
        atomic_fetch_sub( &used, 1 );
        atomic_fetch_add( &lost, 1 );
        errno = saved;
        return;
    }
    table[ i ].tid   = tid;
    table[ i ].depth = ( uint32_t )backtrace( table[ i ].frames, DEPTH );
    errno            = saved;
}

static int
write_all( int fd, const void* data, size_t n )
{
    const char* p = data;
    while ( n > 0 )
    {
        ssize_t w = write( fd, p, n );
        if ( w <= 0 )
        {
            return -1;
        }
        p += w;
        n -= ( size_t )w;
    }
    return 0;
}

static void
copy_maps( const char* path )
{
    int in = open( "/proc/self/maps", O_RDONLY );
    if ( in < 0 )
    {
        return;
    }
    int  out = open( path, O_WRONLY | O_CREAT | O_TRUNC, 0644 );
    char buf[ 65536 ];
    for ( ssize_t n; out >= 0 && ( n = read( in, buf, sizeof buf ) ) > 0; )
    {
        if ( write_all( out, buf, ( size_t )n ) != 0 )
        {
            break;
        }
    }
    close( in );
    if ( out >= 0 )
    {
        close( out );
    }
}

/* The interval of ``rate`` a second (0: the timer stopped), as the two timers take it. */
static void
set_timer( unsigned rate )
{
    long long ns = rate ? 1000000000LL / rate : 0;
    if ( wall_clock )
    {
        struct itimerspec every;
        every.it_interval.tv_sec  = ( time_t )( ns / 1000000000LL );
        every.it_interval.tv_nsec = ( long )( ns % 1000000000LL );
        every.it_value            = every.it_interval;
        timer_settime( wall_timer, 0, &every, NULL );
        return;
    }
    struct itimerval every;
    every.it_interval.tv_sec  = ( time_t )( ns / 1000000000LL );
    every.it_interval.tv_usec = ( suseconds_t )( ( ns % 1000000000LL ) / 1000 );
    every.it_value            = every.it_interval;
    setitimer( ITIMER_PROF, &every, NULL );
}

/* dl_iterate_phdr's callback: the object's GNU build id (its PT_NOTE NT_GNU_BUILD_ID) and its
   resolved path, a line to ``data`` (a FILE*); objects without either are left out. */
static int
note_build_id( struct dl_phdr_info* info, size_t size, void* data )
{
    ( void )size;
    char        exe[ PATH_MAX ];
    const char* name = info->dlpi_name;
    if ( name == NULL || *name == '\0' ) /* the program itself */
    {
        ssize_t n = readlink( "/proc/self/exe", exe, sizeof exe - 1 );
        if ( n <= 0 )
        {
            return 0;
        }
        exe[ n ] = '\0';
        name     = exe;
    }
    char resolved[ PATH_MAX ];
    if ( realpath( name, resolved ) == NULL )
    {
        return 0; /* the vdso, or a file gone since */
    }
    for ( int i = 0; i < info->dlpi_phnum; i++ )
    {
        const ElfW( Phdr )* ph = &info->dlpi_phdr[ i ];
        if ( ph->p_type != PT_NOTE )
        {
            continue;
        }
        const char* p   = ( const char* )( info->dlpi_addr + ph->p_vaddr );
        const char* end = p + ph->p_memsz;
        while ( p + sizeof( ElfW( Nhdr ) ) <= end )
        {
            const ElfW( Nhdr )* note = ( const void* )p;
            const char*          nm   = p + sizeof *note;
            const unsigned char* desc = ( const unsigned char* )( nm + ( ( note->n_namesz + 3 ) & ~3u ) );
            if ( note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp( nm, "GNU", 4 ) == 0 )
            {
                for ( unsigned k = 0; k < note->n_descsz; k++ )
                {
                    fprintf( ( FILE* )data, "%02x", desc[ k ] );
                }
                fprintf( ( FILE* )data, " %s\n", resolved );
                return 0;
            }
            p = ( const char* )desc + ( ( note->n_descsz + 3 ) & ~3u );
        }
    }
    return 0;
}

static void
forked_child( void )
{
    atomic_store( &used, 0 );
    atomic_store( &lost, 0 );
    wall_clock = 0; /* a timer_create timer is not inherited: the child samples its CPU time */
    set_timer( hz );
}

#define WRAP_EXEC( NAME, PARAMS, ARGS )                                                  \
    int NAME PARAMS                                                                       \
    {                                                                                    \
        static int ( *real ) PARAMS;                                                     \
        if ( real == NULL )                                                              \
        {                                                                                \
            *( void** )&real = dlsym( RTLD_NEXT, #NAME );                                \
        }                                                                                \
        if ( real == NULL )                                                              \
        {                                                                                \
            errno = ENOSYS;                                                              \
            return -1;                                                                   \
        }                                                                                \
        if ( table != NULL )                                                             \
        {                                                                                \
            set_timer( 0 );                                                              \
        }                                                                                \
        int r = real ARGS;                                                               \
        int e = errno;                                                                   \
        if ( table != NULL )                                                             \
        {                                                                                \
            set_timer( hz );                                                             \
        }                                                                                \
        errno = e;                                                                       \
        return r;                                                                        \
    }

WRAP_EXEC( execve, ( const char* path, char* const argv[], char* const envp[] ), ( path, argv, envp ) )
WRAP_EXEC( execv, ( const char* path, char* const argv[] ), ( path, argv ) )
WRAP_EXEC( execvp, ( const char* file, char* const argv[] ), ( file, argv ) )
WRAP_EXEC( execvpe, ( const char* file, char* const argv[], char* const envp[] ), ( file, argv, envp ) )

__attribute__( ( constructor ) ) static void
start( void )
{
    const char* dir = getenv( "HOST_SAMPLER_OUT" );
    if ( dir == NULL || *dir == '\0' || strlen( dir ) >= sizeof out_dir - 64 )
    {
        return;
    }
    strcpy( out_dir, dir );
    const char* rate = getenv( "HOST_SAMPLER_HZ" );
    if ( rate != NULL && atoi( rate ) > 0 )
    {
        hz = ( unsigned )atoi( rate );
    }
    const char* only_marked = getenv( "HOST_SAMPLER_MARKED" );
    if ( only_marked != NULL && strcmp( only_marked, "1" ) == 0 )
    {
        atomic_store( &ever_marked, 1 ); /* as if marked off: nothing is kept until a mark */
        atomic_store( &window_open, 0 );
    }
    table = calloc( MAX_SAMPLES, sizeof *table );
    if ( table == NULL )
    {
        return;
    }
    void* warm[ 4 ];
    backtrace( warm, 4 ); /* loads the unwinder now, not inside the handler */

    struct sigaction sa;
    memset( &sa, 0, sizeof sa );
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags     = SA_SIGINFO | SA_RESTART;
    sigemptyset( &sa.sa_mask );
    sigaction( SIGPROF, &sa, NULL );
    const char* clock = getenv( "HOST_SAMPLER_CLOCK" );
    if ( clock != NULL && strcmp( clock, "wall" ) == 0 )
    {
        struct sigevent to_me;
        memset( &to_me, 0, sizeof to_me );
        to_me.sigev_notify          = SIGEV_THREAD_ID;
        to_me.sigev_signo           = SIGPROF;
        to_me._sigev_un._tid        = ( pid_t )thread_id();
        wall_clock = timer_create( CLOCK_MONOTONIC, &to_me, &wall_timer ) == 0;
    }
    pthread_atfork( NULL, NULL, forked_child );
    set_timer( hz );
}

__attribute__( ( destructor ) ) static void
finish( void )
{
    if ( table == NULL )
    {
        return;
    }
    set_timer( 0 );

    uint64_t n = atomic_load( &used ), dropped = atomic_load( &lost );
    if ( n == 0 && dropped == 0 )
    {
        return; /* nothing sampled (a short helper process, or one that never marked) */
    }
    char path[ sizeof out_dir + 64 ];
    snprintf( path, sizeof path, "%s/maps-%d.txt", out_dir, ( int )getpid() );
    copy_maps( path );
    snprintf( path, sizeof path, "%s/buildids-%d.txt", out_dir, ( int )getpid() );
    FILE* ids = fopen( path, "w" );
    if ( ids != NULL )
    {
        dl_iterate_phdr( note_build_id, ids );
        fclose( ids );
    }
    snprintf( path, sizeof path, "%s/samples-%d.bin", out_dir, ( int )getpid() );
    int fd = open( path, O_WRONLY | O_CREAT | O_TRUNC, 0644 );
    if ( fd < 0 )
    {
        return;
    }
    uint32_t head[ 4 ] = { ( uint32_t )getpid(), hz, ( uint32_t )wall_clock, 0 };
    int      bad       = write_all( fd, "HSMPLv2\n", 8 ) || write_all( fd, head, sizeof head )
                         || write_all( fd, &n, sizeof n ) || write_all( fd, &dropped, sizeof dropped );
    for ( uint64_t i = 0; i < n && !bad; i++ )
    {
        uint32_t d = table[ i ].depth;
        bad = write_all( fd, &table[ i ].tid, 4 ) || write_all( fd, &d, 4 )
              || write_all( fd, table[ i ].frames, d * sizeof( void* ) );
    }
    close( fd );
}
