/*
 * LD_PRELOAD experiment (not part of the product): switch CUPTI 13's per-thread activity buffers
 * off (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, default 1 in the CUDA 13 headers) just
 * before Score-P registers its buffer callbacks, which is when CUPTI wants it set. If the lost
 * kernels come from one stream's records spread over per-thread buffers, an unpatched Score-P
 * 8.4 keeps all of them with this shim preloaded.
 *   gcc -shared -fPIC -o libcupti_shared_buffers.so cupti_shared_buffers.c -I$CUDA/include -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <cupti.h>

typedef CUptiResult ( *register_fn )( CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc );

CUptiResult
cuptiActivityRegisterCallbacks( CUpti_BuffersCallbackRequestFunc  request,
                                CUpti_BuffersCallbackCompleteFunc complete )
{
    uint8_t     off = 0, before = 255, after = 255;
    size_t      size = sizeof( uint8_t );
    register_fn real = ( register_fn )dlsym( RTLD_NEXT, "cuptiActivityRegisterCallbacks" );
    cuptiActivityGetAttribute( CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &before );
    size = sizeof( uint8_t );
    CUptiResult set = cuptiActivitySetAttribute( CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &off );
    size = sizeof( uint8_t );
    cuptiActivityGetAttribute( CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &after );
    fprintf( stderr, "cupti_shared_buffers: PER_THREAD_ACTIVITY_BUFFER %u -> %u (set: %d)\n",
             ( unsigned )before, ( unsigned )after, ( int )set );
    return real( request, complete );
}
