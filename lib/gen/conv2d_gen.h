/* conv2d_gen.h - StrayLight-like test data for conv2d, reproducible by seed.  Internal to
 * libportkern (hidden): the public call is pk_conv2d_generate (lib/gen/generate.c). */
#ifndef PK_CONV2D_GEN_H
#define PK_CONV2D_GEN_H

/* A PROBA-V-like frame, float32 [h][w]: a smooth background, regions with sharp edges, fine
 * texture and point sources (wrapping at the borders like the convolution).  Values are
 * positive, about 0.3 .. 6. */
void pk_cv_gen_frame(int h, int w, unsigned seed, float *image);

/* A realistic PSF, float32 [kh][kw], centred at (kh/2, kw/2) like the output: a bright,
 * slightly elliptical and off-centre core, faint wide power-law wings and a faint ghost;
 * positive, normalised to sum 1 (the sum taken in double). */
void pk_cv_gen_psf(int kh, int kw, unsigned seed, float *psf);

#endif
