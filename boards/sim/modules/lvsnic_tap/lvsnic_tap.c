/*
 * lvsnic_tap: a LiteX simulation module that attaches a LiteEthPHYModel
 * (8-bit stream pads "eth", index n) to a host TAP device; one session per
 * port, so the two-port lvsnic SoC can have both ports on taps.
 *
 * Written for lvsnic against LiteX's simulation module interface
 * (modules.h: struct ext_module_s, pads, clk_pos_edge). What it does:
 *  - per-session clock-edge state (every port sees every clock edge);
 *  - the TAP device is opened by name (TUNSETIFF, IFF_TAP | IFF_NO_PI) and
 *    left as configured: addresses, MAC, MTU and link state are the host's
 *    business (boards/sim/run.sh creates persistent taps and configures
 *    them), so the data port tap can carry no address at all;
 *  - frames into the design are separated by at least LVSNIC_TAP_GAP idle
 *    cycles, as on a wire (12-byte inter-frame gap + 8-byte preamble, which
 *    the PHY model does not carry): LiteEth's 8-bit UDP/IP receive path
 *    mangles datagrams that follow each other after a single idle cycle;
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

/* The string value of "interface" in the module's JSON arguments. */
static int tap_name_arg(const char *args, char **val)
{
  json_object *root = json_tokener_parse(args), *v = NULL;
  int rc = RC_JSERROR;
  *val = NULL;
  if (root && json_object_is_type(root, json_type_object) &&
      json_object_object_get_ex(root, "interface", &v) &&
      json_object_is_type(v, json_type_string)) {
    *val = strdup(json_object_get_string(v));
    rc = *val ? RC_OK : RC_NOENMEM;
  } else {
    fprintf(stderr, "[lvsnic_tap] want {\"interface\": \"<tap>\"}, got: %s\n", args ? args : "(none)");
  }
  if (root)
    json_object_put(root);
  return rc;
}

/* The signal of the pad called `name` in a NULL-terminated pad array. */
static char *pad(struct pad_s *pads, const char *name)
{
  struct pad_s *p;
  for (p = pads; p->name; p++)
    if (strcmp(p->name, name) == 0)
      return (char *)p->signal;
  fprintf(stderr, "[lvsnic_tap] no pad %s\n", name);
  return NULL;
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
  ret = tap_name_arg(args, &name);
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
    s->rx = pad(plist->pads, "sink_data");
    s->rx_valid = pad(plist->pads, "sink_valid");
    s->rx_ready = pad(plist->pads, "sink_ready");
    s->tx = pad(plist->pads, "source_data");
    s->tx_valid = pad(plist->pads, "source_valid");
    s->tx_ready = pad(plist->pads, "source_ready");
  }
  if (!strcmp(plist->name, "sys_clk"))
    s->sys_clk = pad(plist->pads, "sys_clk");
  return RC_OK;
}

static int lvsnic_tap_tick(void *sess, uint64_t time_ps)
{
  struct session_s *s = (struct session_s *)sess;
  (void)time_ps;

  if (!s->sys_clk || !s->tx || !s->tx_valid || !s->tx_ready || !s->rx || !s->rx_valid || !s->rx_ready)
    return RC_ERROR; /* a pad is missing (named on stderr by pad()) */
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
