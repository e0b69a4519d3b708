// SPDX-License-Identifier: Apache-2.0
/*
 * Same-run reference for bench/extip: the floor of sending N prebuilt frames out of one
 * interface from C, one send(2) per frame on an AF_PACKET/SOCK_RAW socket bound to the
 * interface (protocol 0: it receives nothing), inside a network namespace. Prints the
 * elapsed nanoseconds of the send loop only (socket set-up excluded), like the Node side
 * measures PacketSocket.send.
 *
 *   send_frames NETNS IFINDEX FRAME_LEN FILE   (FILE: N frames of FRAME_LEN bytes, back to back)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "send_frames: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: send_frames NETNS IFINDEX FRAME_LEN FILE\n");
		return 2;
	}
	char path[512];
	snprintf(path, sizeof(path), "/run/netns/%s", argv[1]);
	int nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0)
		die("setns");
	int ifindex = atoi(argv[2]);
	size_t len = (size_t)atoi(argv[3]);

	int fd = open(argv[4], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		die("open frames");
	unsigned char *buf = malloc((size_t)st.st_size);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size)
		die("read frames");
	size_t n = (size_t)st.st_size / len;

	int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (s < 0)
		die("socket");
	struct sockaddr_ll addr = { .sll_family = AF_PACKET, .sll_ifindex = ifindex };
	if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		die("bind");

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n; i++) {
		if (send(s, buf + i * len, len, MSG_DONTWAIT) < 0)
			die("send");
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
	printf("%lld\n", ns);
	return 0;
}
