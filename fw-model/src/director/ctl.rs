//! Rule changes while traffic flows, as ip_vs_ctl.c applies them
//! (`ip_vs_add_service`, `ip_vs_edit_service`, `ip_vs_del_service`,
//! `ip_vs_add_dest`, `ip_vs_edit_dest`, `ip_vs_del_dest`, `ip_vs_flush`,
//! `ip_vs_zero_service` / `ip_vs_zero_all`).

use super::{service_name, Director, DirectorError};
use crate::ipvs::{DestId, Estimator, RuleError, ServiceId, Stats};
use crate::rules::{DestRule, Protocol, ServiceKey, ServiceRule};

impl Director {
    /// `ipvsadm -Z [service]` (`ip_vs_zero_service` / `ip_vs_zero_all`):
    /// counters and rate averages restart from zero; without a service the
    /// director's totals too.
    pub fn zero_stats(&mut self, key: Option<&ServiceKey>) -> Result<(), RuleError> {
        self.services.zero(key)?;
        if key.is_none() {
            self.total = Stats::default();
            self.total_est = Estimator::default();
        }
        Ok(())
    }

    /// Applies `ipvsadm -a` while traffic flows.
    pub fn add_dest(&mut self, key: &ServiceKey, d: &DestRule) -> Result<DestId, DirectorError> {
        let name = service_name(key);
        self.check_neighbor(d.addr, &name)?;
        self.services.add_dest(key, d).map_err(|error| DirectorError::Rule { service: name, error })
    }

    /// Applies `ipvsadm -A`.
    pub fn add_service(&mut self, rule: &ServiceRule) -> Result<ServiceId, DirectorError> {
        let name = service_name(&rule.key);
        for r in &rule.dests {
            self.check_neighbor(r.addr, &name)?;
        }
        let now = self.now;
        let id = self
            .services
            .add_service(rule, now)
            .map_err(|error| DirectorError::Rule { service: name.clone(), error })?;
        for r in &rule.dests {
            self.services.add_dest(&rule.key, r).map_err(|error| DirectorError::Rule { service: name.clone(), error })?;
        }
        Ok(id)
    }

    /// Applies `ipvsadm -E`.
    pub fn edit_service(&mut self, rule: &ServiceRule) -> Result<(), DirectorError> {
        let now = self.now;
        self.services.edit_service(rule, now).map_err(|error| DirectorError::Rule { service: service_name(&rule.key), error })
    }

    /// Applies `ipvsadm -e`.
    pub fn edit_dest(&mut self, key: &ServiceKey, d: &DestRule) -> Result<(), DirectorError> {
        self.services.edit_dest(key, d).map_err(|error| DirectorError::Rule { service: service_name(key), error })
    }

    /// Applies `ipvsadm -C`.
    pub fn clear(&mut self) {
        let now = self.now;
        self.services.clear(now);
        if self.cfg.sysctl.expire_nodest_conn {
            self.nodest_flush = true;
        }
    }

    /// Applies `ipvsadm -d`.
    pub fn del_dest(&mut self, key: &ServiceKey, addr: impl Into<std::net::IpAddr>, port: u16) -> Result<(), DirectorError> {
        let now = self.now;
        self.services
            .del_dest(key, addr.into(), port, now)
            .map_err(|error| DirectorError::Rule { service: service_name(key), error })?;
        if self.cfg.sysctl.expire_nodest_conn {
            self.nodest_flush = true;
        }
        Ok(())
    }

    /// Applies `ipvsadm -D`.
    pub fn del_service(&mut self, key: &ServiceKey) -> Result<(), DirectorError> {
        let now = self.now;
        self.services.del_service(key, now).map_err(|error| DirectorError::Rule { service: service_name(key), error })?;
        if self.cfg.sysctl.expire_nodest_conn {
            self.nodest_flush = true;
        }
        Ok(())
    }

    /// The protocol of a service key, for callers that print it.
    pub fn proto_of(key: &ServiceKey) -> Option<Protocol> {
        key.as_ipv4().map(|(p, _, _)| p)
    }
}
