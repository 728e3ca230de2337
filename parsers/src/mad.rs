//! Management datagrams (IBTA Vol. 1 13.4): the 24-byte common header every MAD starts with, then 232 bytes
//! of class data. On RoCE they travel as UD SENDs to QP 1, the General Services Interface; the
//! Communication Management class (0x07) is decoded by [`crate::cm`], other classes show their header only.
use nom::Parser;

use crate::be::{bytes, put_field, u8, u16, u32, u64};
use crate::cm::CmMessage;
use crate::error::{Layer, Malformed, need, short};
use crate::fields::{Field, Value, Visitor};

/// QP 1, the General Services Interface, where CM MADs go.
pub const GSI_QP: u32 = 1;
/// The well-known Q_Key of QP 1 (IBTA 10.2.5).
pub const GSI_QKEY: u32 = 0x8001_0000;
/// Base version of the IBTA MAD format.
pub const BASE_VERSION: u8 = 1;
/// Management class of Communication Management.
pub const CLASS_CM: u8 = 0x07;
/// CM class version of IBTA 1.2 and later (what Linux sends).
pub const CM_CLASS_VERSION: u8 = 2;
/// Method Send(), the only one CM uses for its messages.
pub const METHOD_SEND: u8 = 0x03;

/// The MAD common header (24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MadHeader {
    pub base_version: u8,
    pub mgmt_class: u8,
    pub class_version: u8,
    /// The whole byte: the R bit (bit 7, set on responses) and the method (bits 6-0).
    pub method: u8,
    pub status: u16,
    pub class_specific: u16,
    pub transaction_id: u64,
    pub attribute_id: u16,
    pub reserved: u16,
    pub attribute_modifier: u32,
}

impl MadHeader {
    pub const LEN: usize = 24;

    pub fn parse(input: &[u8]) -> Result<(Self, &[u8]), Malformed> {
        need(Layer::Mad, input, Self::LEN)?;
        let (
            rest,
            (
                base_version,
                mgmt_class,
                class_version,
                method,
                status,
                class_specific,
                transaction_id,
                attribute_id,
                reserved,
                attribute_modifier,
            ),
        ) = (u8, u8, u8, u8, u16, u16, u64, u16, u16, u32)
            .parse(input)
            .map_err(short(Layer::Mad, Self::LEN, input))?;
        let header = MadHeader {
            base_version,
            mgmt_class,
            class_version,
            method,
            status,
            class_specific,
            transaction_id,
            attribute_id,
            reserved,
            attribute_modifier,
        };
        Ok((header, rest))
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[
            self.base_version,
            self.mgmt_class,
            self.class_version,
            self.method,
        ]);
        out.extend_from_slice(&self.status.to_be_bytes());
        out.extend_from_slice(&self.class_specific.to_be_bytes());
        out.extend_from_slice(&self.transaction_id.to_be_bytes());
        out.extend_from_slice(&self.attribute_id.to_be_bytes());
        out.extend_from_slice(&self.reserved.to_be_bytes());
        out.extend_from_slice(&self.attribute_modifier.to_be_bytes());
    }

    /// The R bit: this MAD answers another.
    pub fn is_response(&self) -> bool {
        self.method & 0x80 != 0
    }

    /// The method as Wireshark writes it (`Send()`, `GetResp()`), R bit included.
    pub fn method_name(&self) -> Option<&'static str> {
        Some(match self.method {
            0x01 => "Get()",
            0x02 => "Set()",
            0x81 => "GetResp()",
            0x03 => "Send()",
            0x05 => "Trap()",
            0x06 => "Report()",
            0x86 => "ReportResp()",
            0x07 => "TrapRepress()",
            0x12 => "GetTable()",
            0x92 => "GetTableResp()",
            0x13 => "GetTraceTable()",
            0x14 => "GetMulti()",
            0x94 => "GetMultiResp()",
            0x15 => "Delete()",
            0x95 => "DeleteResp()",
            _ => return None,
        })
    }

    /// The management class (IBTA 13.4.4).
    pub fn class_name(&self) -> &'static str {
        match self.mgmt_class {
            0x01 => "Subnet Management (LID routed)",
            0x81 => "Subnet Management (directed route)",
            0x03 => "Subnet Administration",
            0x04 => "Performance Management",
            0x05 => "Baseboard Management",
            0x06 => "Device Management",
            CLASS_CM => "Communication Management",
            0x08 => "SNMP Tunneling",
            0x09..=0x0F | 0x30..=0x4F => "Vendor specific",
            0x10..=0x2F => "Application specific",
            _ => "reserved class",
        }
    }

    pub fn visit<'a>(&self, offset: usize, v: &mut impl Visitor<'a>) {
        v.header("MAD Header - Common Management Datagram", offset, Self::LEN);
        let hex = |key: &'static str, label: &'static str, value: u64, digits: u8| {
            Field::new(key, label, Value::Hex(value, digits))
        };
        v.field(hex(
            "infiniband.mad.baseversion",
            "Base Version",
            self.base_version.into(),
            2,
        ));
        v.field(
            hex(
                "infiniband.mad.mgmtclass",
                "Management Class",
                self.mgmt_class.into(),
                2,
            )
            .meaning(self.class_name()),
        );
        v.field(hex(
            "infiniband.mad.classversion",
            "Class Version",
            self.class_version.into(),
            2,
        ));
        let method = hex("infiniband.mad.method", "Method", self.method.into(), 2);
        v.field(match self.method_name() {
            Some(name) => method.meaning(name),
            None => method,
        });
        v.field(Field::new(
            "rocescope.mad.response",
            "Response (R bit)",
            Value::Bool(self.is_response()),
        ));
        v.field(hex(
            "infiniband.mad.status",
            "Status",
            self.status.into(),
            4,
        ));
        v.field(hex(
            "infiniband.mad.classspecific",
            "Class Specific",
            self.class_specific.into(),
            4,
        ));
        v.field(hex(
            "infiniband.mad.transactionid",
            "Transaction ID",
            self.transaction_id,
            16,
        ));
        let attribute = hex(
            "infiniband.mad.attributeid",
            "Attribute ID",
            self.attribute_id.into(),
            4,
        );
        v.field(if self.mgmt_class == CLASS_CM {
            attribute.meaning(crate::cm::attribute_name(self.attribute_id))
        } else {
            attribute
        });
        v.field(hex(
            "infiniband.mad.attributemodifier",
            "Attribute Modifier",
            self.attribute_modifier.into(),
            8,
        ));
    }
}

/// What follows the common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    Cm(CmMessage<'a>),
    /// The 232 data bytes of a class rocescope does not decode.
    Other(&'a [u8]),
}

/// A whole 256-byte MAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mad<'a> {
    pub header: MadHeader,
    pub body: Body<'a>,
}

impl<'a> Mad<'a> {
    /// MADs on the GSI are always 256 bytes (IBTA 13.4.2).
    pub const LEN: usize = 256;
    pub const DATA_LEN: usize = Self::LEN - MadHeader::LEN;

    pub fn parse(input: &'a [u8]) -> Result<(Self, &'a [u8]), Malformed> {
        need(Layer::Mad, input, Self::LEN)?;
        let (header, data) = MadHeader::parse(input)?;
        let (rest, data) =
            bytes(Self::DATA_LEN)
                .parse(data)
                .map_err(short(Layer::Mad, Self::LEN, input))?;
        let body = if header.mgmt_class == CLASS_CM {
            Body::Cm(CmMessage::parse(header.attribute_id, data)?)
        } else {
            Body::Other(data)
        };
        Ok((Mad { header, body }, rest))
    }

    /// A CM message as RDMA CM sends it: base version 1, class 7, class version 2, Send(), status 0, the
    /// message's attribute ID.
    pub fn cm_send(transaction_id: u64, message: CmMessage<'a>) -> Mad<'a> {
        Mad {
            header: MadHeader {
                base_version: BASE_VERSION,
                mgmt_class: CLASS_CM,
                class_version: CM_CLASS_VERSION,
                method: METHOD_SEND,
                transaction_id,
                attribute_id: message.attribute_id(),
                ..MadHeader::default()
            },
            body: Body::Cm(message),
        }
    }

    pub fn cm(&self) -> Option<&CmMessage<'a>> {
        match &self.body {
            Body::Cm(m) => Some(m),
            Body::Other(_) => None,
        }
    }

    /// The 256 bytes (a body of another class is cut or zero-filled to 232 bytes).
    pub fn emit(&self, out: &mut Vec<u8>) {
        self.header.emit(out);
        match &self.body {
            Body::Cm(m) => m.emit(out),
            Body::Other(data) => put_field(out, data, Self::DATA_LEN),
        }
    }

    pub fn visit(&self, offset: usize, v: &mut impl Visitor<'a>) {
        self.header.visit(offset, v);
        if let Body::Cm(m) = &self.body {
            m.visit(offset + MadHeader::LEN, v);
        }
    }
}
