/*
 * lvsnic_tap: a LiteX simulation module that attaches a LiteEthPHYModel
 * (8-bit stream pads "eth", index n) to a host TAP device.
 *
 * Derived from LiteX's litex/build/sim/core/modules/ethernet/ethernet.c
 * (Copyright (C) 2017 LambdaConcept, 2018 Florent Kermarrec,
 * BSD-2-Clause), changed for lvsnic's two-port simulation:
 *  - the clock-edge state is per session (LiteX's module keeps it in a
 *    function-static variable, so with two ports only the first one
 *    sees clock edges);
 *  - the TAP device is opened by name (TUNSETIFF, IFF_TAP | IFF_NO_PI) and
 *    left as configured: addresses, MAC, MTU and link state are the host's
 *    business (boards/sim/run.sh creates persistent taps and configures
 *    them), so the data port tap can carry no address at all;
 *  - frames into the design are separated by at least LVSNIC_TAP_GAP idle
 *    cycles, as on a wire (12-byte inter-frame gap + 8-byte preamble, which
 *    the PHY model does not carry): LiteX's module leaves one idle cycle,
 *    and LiteEth's 8-bit UDP/IP receive path mangles datagrams that follow
 *    each other that closely;
 *  - frames up to 16 KiB (jumbo) both ways; every readable frame is read
 *    per event (non-blocking), and the receive queue is bounded (frames
 *    beyond LVSNIC_TAP_QUEUE are dropped and counted, as a NIC would).
 *
 * Arguments (sim_config.js): {"interface": "<tap name>"}.
 * Frames to the simulation are padded to 60 bytes (the shortest frame a
 * wire carries, FCS excluded); frames from it are written as the MAC
 * emits them (no preamble, no FCS: the PHY model has neither).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <net/if.h>
#include <linux/if_tun.h>

#include <event2/event.h>
#include <json-c/json.h>
#include "error.h"
#include "modules.h"

#define LVSNIC_TAP_FRAME 16384
#define LVSNIC_TAP_QUEUE 4096
#define LVSNIC_TAP_GAP   20

struct frame_s {
  size_t len;
  struct frame_s *next;
  unsigned char data[];
};

struct session_s {
  char *tx;            /* pads: source_* = from the design to the tap */
  char *tx_valid;
  char *tx_ready;
  char *rx;            /* pads: sink_* = from the tap to the design */
  char *rx_valid;
  char *rx_ready;
  char *sys_clk;
  clk_edge_state_t edge;
  int fd;
  char name[IFNAMSIZ];
  unsigned char txbuf[LVSNIC_TAP_FRAME];
  size_t txlen;
  int tx_overlong;
  struct frame_s *cur;  /* frame being fed to the design */
  size_t cur_sent;
  unsigned idle;        /* idle cycles since the last frame into the design */
  struct frame_s *head, *tail;
  unsigned queued;
  unsigned long long rx_frames, rx_dropped, tx_frames, tx_dropped;
  struct event *ev;
};

static struct event_base *base = NULL;

static int get_arg(const char *args, const char *key, char **val)
{
  json_object *jsobj, *obj = NULL;
  *val = NULL;
  jsobj = json_tokener_parse(args);
  if (!jsobj || !json_object_is_type(jsobj, json_type_object)) {
    fprintf(stderr, "[lvsnic_tap] arguments must be a JSON object: %s\n", args);
    return RC_JSERROR;
  }
  if (!json_object_object_get_ex(jsobj, key, &obj)) {
    fprintf(stderr, "[lvsnic_tap] missing argument \"%s\" (%s)\n", key, args);
    json_object_put(jsobj);
    return RC_JSERROR;
  }
  *val = strdup(json_object_get_string(obj));
  json_object_put(jsobj);
  return RC_OK;
}

static void pads_get(struct pad_s *pads, const char *name, char **signal)
{
  int i;
  *signal = NULL;
  for (i = 0; pads[i].name; i++)
    if (!strcmp(pads[i].name, name)) {
      *signal = (char *)pads[i].signal;
      return;
    }
  fprintf(stderr, "[lvsnic_tap] pad %s not found\n", name);
}

static int lvsnic_tap_start(void *b)
{
  base = (struct event_base *)b;
  return RC_OK;
}

static void on_readable(int fd, short event, void *arg)
{
  struct session_s *s = (struct session_s *)arg;
  unsigned char buf[LVSNIC_TAP_FRAME];
  (void)event;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        fprintf(stderr, "[lvsnic_tap] %s: read: %s\n", s->name, strerror(errno));
      return;
    }
    if (n == 0)
      return;
    if (s->queued >= LVSNIC_TAP_QUEUE) {
      s->rx_dropped++;
      continue;
    }
    size_t len = n < 60 ? 60 : (size_t)n;
    struct frame_s *f = calloc(1, sizeof(*f) + len);
    if (!f) {
      s->rx_dropped++;
      continue;
    }
    memcpy(f->data, buf, n);
    f->len = len;
    if (s->tail)
      s->tail->next = f;
    else
      s->head = f;
    s->tail = f;
    s->queued++;
  }
}

static int lvsnic_tap_new(void **sess, char *args)
{
  struct session_s *s;
  struct ifreq ifr;
  char *name = NULL;
  int ret;

  if (!sess)
    return RC_INVARG;
  *sess = NULL;
  ret = get_arg(args, "interface", &name);
  if (ret != RC_OK)
    return ret;
  s = calloc(1, sizeof(*s));
  if (!s) {
    free(name);
    return RC_NOENMEM;
  }
  s->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);
  if (s->fd < 0) {
    fprintf(stderr, "[lvsnic_tap] /dev/net/tun: %s\n", strerror(errno));
    free(name);
    free(s);
    return RC_ERROR;
  }
  memset(&ifr, 0, sizeof(ifr));
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%.*s", IFNAMSIZ - 1, name);
  if (ioctl(s->fd, TUNSETIFF, &ifr) < 0) {
    fprintf(stderr, "[lvsnic_tap] TUNSETIFF %s: %s\n", name, strerror(errno));
    close(s->fd);
    free(name);
    free(s);
    return RC_ERROR;
  }
  snprintf(s->name, sizeof(s->name), "%.*s", IFNAMSIZ - 1, ifr.ifr_name);
  free(name);
  s->ev = event_new(base, s->fd, EV_READ | EV_PERSIST, on_readable, s);
  event_add(s->ev, NULL);
  printf("[lvsnic_tap] attached to %s\n", s->name);
  fflush(stdout);
  *sess = s;
  return RC_OK;
}

static int lvsnic_tap_add_pads(void *sess, struct pad_list_s *plist)
{
  struct session_s *s = (struct session_s *)sess;
  if (!sess || !plist)
    return RC_INVARG;
  if (!strcmp(plist->name, "eth")) {
    pads_get(plist->pads, "sink_data", &s->rx);
    pads_get(plist->pads, "sink_valid", &s->rx_valid);
    pads_get(plist->pads, "sink_ready", &s->rx_ready);
    pads_get(plist->pads, "source_data", &s->tx);
    pads_get(plist->pads, "source_valid", &s->tx_valid);
    pads_get(plist->pads, "source_ready", &s->tx_ready);
  }
  if (!strcmp(plist->name, "sys_clk"))
    pads_get(plist->pads, "sys_clk", &s->sys_clk);
  return RC_OK;
}

static int lvsnic_tap_tick(void *sess, uint64_t time_ps)
{
  struct session_s *s = (struct session_s *)sess;
  (void)time_ps;

  if (!clk_pos_edge(&s->edge, *s->sys_clk))
    return RC_OK;

  /* design -> tap: one byte per cycle while valid; the frame ends when
     valid drops (the MAC inserts an inter-frame gap). */
  *s->tx_ready = 1;
  if (*s->tx_valid) {
    if (s->txlen < sizeof(s->txbuf))
      s->txbuf[s->txlen++] = (unsigned char)*s->tx;
    else
      s->tx_overlong = 1;
  } else if (s->txlen) {
    if (s->tx_overlong || write(s->fd, s->txbuf, s->txlen) != (ssize_t)s->txlen)
      s->tx_dropped++;
    else
      s->tx_frames++;
    s->txlen = 0;
    s->tx_overlong = 0;
  }

  /* tap -> design: one byte per cycle, LVSNIC_TAP_GAP idle cycles between
     frames. */
  *s->rx_valid = 0;
  if (!s->cur && s->idle < LVSNIC_TAP_GAP)
    s->idle++;
  if (s->cur) {
    *s->rx_valid = 1;
    *s->rx = (char)s->cur->data[s->cur_sent++];
    if (s->cur_sent == s->cur->len) {
      free(s->cur);
      s->cur = NULL;
      s->idle = 0;
      s->rx_frames++;
    }
  } else if (s->head && s->idle >= LVSNIC_TAP_GAP) {
    s->cur = s->head;
    s->cur_sent = 0;
    s->head = s->head->next;
    if (!s->head)
      s->tail = NULL;
    s->queued--;
  }
  return RC_OK;
}

static int lvsnic_tap_close(void *sess)
{
  struct session_s *s = (struct session_s *)sess;
  if (!s)
    return RC_OK;
  fprintf(stderr, "[lvsnic_tap] %s: %llu frames in, %llu dropped; %llu frames out, %llu dropped\n",
          s->name, s->rx_frames, s->rx_dropped, s->tx_frames, s->tx_dropped);
  return RC_OK;
}

static struct ext_module_s ext_mod = {
  "lvsnic_tap",
  lvsnic_tap_start,
  lvsnic_tap_new,
  lvsnic_tap_add_pads,
  lvsnic_tap_close,
  lvsnic_tap_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
  return register_module(&ext_mod);
}
