/* mpiio: an unmodified MPI-IO program for the mount test. Each of the N
 * ranks writes BLOCKS blocks of BS bytes of PATH, 1D-strided (block i of
 * rank r at byte (i*N + r)*BS), with collective writes, syncs, reads every
 * block back collectively and checks it. Byte x of the file is (x*7) % 251.
 * Usage: mpiexec -n N mpiio PATH BS BLOCKS. Exit status 0 if all matched. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(char *b, MPI_Offset off, int n) {
	for (int j = 0; j < n; j++)
		b[j] = (char)(((off + j) * 7) % 251);
}

int main(int argc, char **argv) {
	int rank, size, bad = 0, total = 0;
	MPI_File fh;
	MPI_Status st;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		if (rank == 0)
			fprintf(stderr, "usage: mpiio PATH BS BLOCKS\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int bs = atoi(argv[2]), blocks = atoi(argv[3]);
	char *buf = malloc(bs), *back = malloc(bs);
	if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: MPI_File_open %s failed\n", rank, argv[1]);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int i = 0; i < blocks; i++) {
		MPI_Offset off = ((MPI_Offset)i * size + rank) * bs;
		fill(buf, off, bs);
		if (MPI_File_write_at_all(fh, off, buf, bs, MPI_BYTE, &st) != MPI_SUCCESS)
			bad++;
	}
	MPI_File_sync(fh);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < blocks; i++) {
		MPI_Offset off = ((MPI_Offset)i * size + rank) * bs;
		fill(buf, off, bs);
		memset(back, 0, bs);
		if (MPI_File_read_at_all(fh, off, back, bs, MPI_BYTE, &st) != MPI_SUCCESS || memcmp(buf, back, bs) != 0)
			bad++;
	}
	MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_File_close(&fh);
	if (rank == 0)
		printf("mpiio: %d ranks, %d bad blocks\n", size, total);
	free(buf);
	free(back);
	MPI_Finalize();
	return total != 0;
}
