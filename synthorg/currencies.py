"""ISO 4217 currency codes in use (pure: no Django import).

Active codes of ISO 4217 (list one, 2024 amendments), plus the precious-metal and fund
codes clients do record, and ``XTS`` (reserved for testing). Historic codes are not
accepted: money recorded in them cannot be compared with anything current.
"""

from __future__ import annotations

_CODES = """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL
    BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK
    DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR
    ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD
    LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK
    NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD
    SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD
    USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF
    XPD XPF XPT XSU XTS XUA YER ZAR ZMW ZWG
"""
ISO_4217_CODES = frozenset(_CODES.split())


def is_iso_4217(code: str) -> bool:
    return code in ISO_4217_CODES
